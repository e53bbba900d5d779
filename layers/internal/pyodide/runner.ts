/**
 * The Python side of a Pyodide run: the shared runner core (the same value checks, compilation,
 * namespaces and bridge as the subprocess runtime) over a different transport. Messages to the
 * host are JSON lines written to the realm's host device (`/dev/etr-host`); settlements come
 * back through `_etr_settle(line)`, which the worker calls. `_etr_start(config)` starts the
 * program as a task on Pyodide's event loop and writes the outcome line when it ends.
 *
 * Before the program runs, the runner closes the import paths to Pyodide's FFI (`js`,
 * `pyodide_js`, `pyodide`, `_pyodide`, `micropip`): defence in depth only, since the realm the
 * interpreter runs in holds nothing of the host whatever JavaScript a program reaches.
 *
 * @internal
 */
import { RUNNER_CORE } from "../python/runner.js"

const PYODIDE_MAIN = String.raw`import asyncio, os, sys

_DEVICE = os.open("/dev/etr-host", os.O_WRONLY)


def _write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(_DEVICE, view):]


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


_BLOCKED = ("js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "micropip")


class _Closed:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in _BLOCKED:
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        return None


sys.meta_path.insert(0, _Closed)
for _name in list(sys.modules):
    if _name.split(".")[0] in ("js", "pyodide_js", "micropip"):
        del sys.modules[_name]
del _name

_etr_state = {}


def _etr_done(limit):
    def done(task):
        _flush()
        try:
            result = task.result()
        except MemoryError:
            _write(b'{"t":"error","kind":"memory"}\n')
            return
        except RecursionError as error:
            _write(_error_line("stack", _exception_text(error)))
            return
        except BaseException as error:
            _write(_error_line("exception", _exception_text(error)))
            return
        try:
            _write(_outcome(result, limit))
        except MemoryError:
            _write(b'{"t":"error","kind":"memory"}\n')
    return done


def _etr_start(text):
    cfg = json.loads(text)
    sys.setrecursionlimit(cfg["recursionLimit"])
    sys.argv = [_FILENAME]
    os.environ.clear()
    loop = asyncio.get_event_loop()
    loop.set_exception_handler(lambda loop, context: None)
    scope, settle = _bridge(cfg, loop)
    _etr_state["settle"] = settle
    try:
        main = _compile(cfg["program"], scope)
    except RecursionError as error:
        _write(_error_line("stack", _exception_text(error)))
        return
    except BaseException as error:
        _write(_error_line("exception", _exception_text(error)))
        return
    task = loop.create_task(main())
    task.add_done_callback(_etr_done(cfg["resultBytes"]))


def _etr_settle(line):
    settle = _etr_state.get("settle")
    if settle is not None:
        settle(line.encode("ascii", "replace"))
`

/** The runner a fresh interpreter runs before the program (defines `_etr_start`, `_etr_settle`). @internal */
export const PYODIDE_RUNNER: string = `${RUNNER_CORE}\n\n${PYODIDE_MAIN}`
