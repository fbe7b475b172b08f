"""Schemas of authentication and credential management (KIP-43 SASL handshake, KIP-152
SaslAuthenticate, KIP-368 re-authentication, KIP-554 SCRAM credentials).

A client on a SASL listener sends SaslHandshake naming its mechanism, then the mechanism's
tokens: framed in SaslAuthenticate (handshake v1), or bare size-prefixed tokens (handshake v0,
what old clients do). Notation: see :mod:`fastkafka.protocol.schema`.
"""
from ..schema import declare

SASL_HANDSHAKE = declare(17, "SaslHandshake", max_version=1, request="""
    mechanism                string
""", response="""
    error_code               int16
    mechanisms               []string
""")

SASL_AUTHENTICATE = declare(36, "SaslAuthenticate", max_version=2, first_flexible=2, request="""
    auth_bytes               bytes
""", response="""
    error_code               int16
    error_message            string  null  =null
    auth_bytes               bytes
    session_lifetime_ms      int64   v1+  =0
""")

# mechanism numbers: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 (0 unknown)
DESCRIBE_USER_SCRAM_CREDENTIALS = declare(50, "DescribeUserScramCredentials", max_version=0,
                                          first_flexible=0, request="""
    users                    []      null
      name                   string
""", response="""
    throttle_time_ms         int32
    error_code               int16
    error_message            string  null  =null
    results                  []      <users
      user                   string  <name
      error_code             int16
      error_message          string  null  =null
      credential_infos       []
        mechanism            int8
        iterations           int32
""")

# (an error response answers each upserted user; the schema mirrors one request array)
ALTER_USER_SCRAM_CREDENTIALS = declare(51, "AlterUserScramCredentials", max_version=0,
                                       first_flexible=0, request="""
    deletions                []
      name                   string
      mechanism              int8
    upsertions               []
      name                   string
      mechanism              int8
      iterations             int32
      salt                   bytes
      salted_password        bytes
""", response="""
    throttle_time_ms         int32
    results                  []      <upsertions
      user                   string  <name
      error_code             int16
      error_message          string  null  =null
""")
