"""The broker's network server and request handlers (L4): selectors processors, dispatch, handlers."""
