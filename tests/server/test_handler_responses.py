"""Every handler answers with its API's generated response class, never a bare dict (issue 13):
the classes are what type checkers, ``repr`` and the encoder's field checks see."""
import ast
import pathlib

import fastkafka.server.handlers as handlers_pkg

HANDLERS_DIR = pathlib.Path(handlers_pkg.__file__).parent


def dict_answers(source: str) -> list[int]:
    """Lines where a ``handle_*`` function (or a callback inside one) returns or sends a dict."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("handle_")):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, (ast.Dict, ast.DictComp)):
                found.append(node.lineno)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "send" and node.args
                  and isinstance(node.args[0], (ast.Dict, ast.DictComp))):
                found.append(node.lineno)
    return found


def test_no_handler_answers_with_a_dict():
    offenders = {p.name: dict_answers(p.read_text()) for p in sorted(HANDLERS_DIR.glob("*.py"))}
    assert {name: lines for name, lines in offenders.items() if lines} == {}


def test_the_check_sees_a_dict_answer():
    source = '''
def handle_heartbeat(ctx, req):
    return {"throttle_time_ms": 0, "error_code": 0}

def handle_join_group(ctx, req):
    def done(r):
        ctx.send({"error_code": r.error})
    return ctx.response(error_code=0)
'''
    assert dict_answers(source) == [3, 7]
