/**
 * The Python side of the runtime: the runner every run starts with `python3 -c`. It reads one
 * configuration line on fd 3, applies the resource limits, runs the program as the body of an
 * async function and speaks JSON lines with the host (calls and the outcome on fd 4, binding
 * settlements on fd 3). Started with `drop <uid> <gid> <dir>` (the sandbox, as root) it first drops
 * to that user for good and enters its run directory (which only that user may enter); the
 * program can then start no process (RLIMIT_NPROC 0). It ships as a string so the compiled
 * package carries it.
 *
 * @internal
 */

/**
 * The part of the runner both Python runtimes share (the subprocess and Pyodide): JSON value
 * checks, the program compiled as the body of an async function, namespaces, error classes,
 * the binding bridge (`_bridge(cfg, loop)` gives the program's globals and the settle function;
 * it writes call messages through `_write`, which each runtime defines) and the outcome line.
 *
 * @internal
 */
export const RUNNER_CORE: string = String.raw`import ast, builtins, json, math

_FILENAME = "<program>"


def _dumps(value, ascii_only=True):
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=False, separators=(",", ":"))


def _type_name(value):
    try:
        name = type(value).__name__
        return name if isinstance(name, str) else "object"
    except BaseException:
        return "object"


def _kind(value):
    if value is None or value is True or value is False or isinstance(value, str):
        return 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        try:
            if int(float(value)) == value:
                return 0
        except OverflowError:
            pass
        return "an integer too large for a JSON number to hold exactly"
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value == math.inf:
            return "Infinity"
        if value == -math.inf:
            return "-Infinity"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "negative zero"
        return 0
    if isinstance(value, (list, tuple)):
        return 1
    if isinstance(value, dict):
        return 2
    return "a value of type " + _type_name(value)


def _step(frame):
    key = frame[2]
    if isinstance(key, int):
        return "[%d]" % key
    text = _dumps(key)
    if len(text) > 42:
        text = text[:40] + "…"
    return "[" + text + "]"


def _where(root, stack, depth):
    return " at " + root + "".join(_step(frame) for frame in stack[:depth])


def _problem(value, root):
    try:
        kind = _kind(value)
        if kind == 0:
            return None
        if isinstance(kind, str):
            return kind + " at " + root
        stack = []
        on_path = set()

        def enter(container, kind):
            on_path.add(id(container))
            items = iter(container.items()) if kind == 2 else enumerate(container)
            stack.append([container, items, None, kind])

        enter(value, kind)
        while stack:
            frame = stack[-1]
            descended = False
            for key, child in frame[1]:
                if frame[3] == 2 and not isinstance(key, str):
                    return "a key of type " + _type_name(key) + _where(root, stack, len(stack) - 1)
                frame[2] = key
                kind = _kind(child)
                if kind == 0:
                    continue
                if isinstance(kind, str):
                    return kind + _where(root, stack, len(stack))
                if id(child) in on_path:
                    return "a cycle" + _where(root, stack, len(stack))
                enter(child, kind)
                descended = True
                break
            if not descended:
                stack.pop()
                on_path.discard(id(frame[0]))
        return None
    except MemoryError:
        raise
    except BaseException as error:
        return "a value that could not be read (" + _type_name(error) + ") at " + root


def _exception_text(error):
    try:
        kind = type(error)
        name = kind.__qualname__
        module = kind.__module__
        if module not in ("builtins", "__main__"):
            name = module + "." + name
    except BaseException:
        name = "Exception"
    try:
        message = error.msg if isinstance(error, SyntaxError) else str(error)
        if not isinstance(message, str):
            message = ""
    except BaseException:
        message = "<exception str() failed>"
    text = name + ": " + message if message else name
    if len(text) > 4000:
        text = text[:4000] + "…"
    line = None
    if isinstance(error, SyntaxError) and error.filename == _FILENAME:
        line = error.lineno
    else:
        trace = error.__traceback__
        while trace is not None:
            if trace.tb_frame.f_code.co_filename == _FILENAME:
                line = trace.tb_lineno
            trace = trace.tb_next
    if isinstance(line, int):
        text += " (line %d)" % line
    return text


class _Returns(ast.NodeTransformer):
    def _scope(self, node):
        return node

    visit_FunctionDef = _scope
    visit_AsyncFunctionDef = _scope
    visit_ClassDef = _scope
    visit_Lambda = _scope

    def visit_Return(self, node):
        if node.value is None:
            return node
        wrapped = ast.List(elts=[self.visit(node.value)], ctx=ast.Load())
        return ast.copy_location(ast.Return(value=ast.copy_location(wrapped, node.value)), node)

    def _yield(self, node):
        raise SyntaxError("'yield' outside function", (_FILENAME, node.lineno, node.col_offset + 1, None))

    visit_Yield = _yield
    visit_YieldFrom = _yield


def _compile(source, scope):
    tree = ast.parse(source, _FILENAME, "exec")
    body = [_Returns().visit(node) for node in tree.body] or [ast.Pass()]
    main = ast.AsyncFunctionDef(
        name="__dsh_main__",
        args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=body,
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    if "type_params" in ast.AsyncFunctionDef._fields:
        main.type_params = []
    main.lineno, main.col_offset = 1, 0
    module = ast.Module(body=[main], type_ignores=[])
    ast.fix_missing_locations(module)
    exec(compile(module, _FILENAME, "exec", dont_inherit=True), scope)
    return scope.pop("__dsh_main__")


def _error_class(name, member):
    return type(name, (Exception,), {
        "__module__": "__main__",
        "__qualname__": name,
        member: None,
        "message": property(lambda self: self.args[0] if self.args and isinstance(self.args[0], str) else ""),
    })


def _namespace(label, functions):
    def dunder(key):
        return key.startswith("__") and key.endswith("__")

    class Namespace:
        __slots__ = ()

        def __getitem__(self, key):
            try:
                return functions[key]
            except (KeyError, TypeError):
                raise KeyError(key) from None

        def __getattr__(self, key):
            if key.isidentifier() and not dunder(key) and key in functions:
                return functions[key]
            raise AttributeError("%s has no tool named %r" % (label, key))

        def __contains__(self, key):
            try:
                return key in functions
            except TypeError:
                return False

        def __iter__(self):
            return iter(list(functions))

        def __len__(self):
            return len(functions)

        def __dir__(self):
            return [key for key in functions if key.isidentifier() and not dunder(key)]

        def __repr__(self):
            return "<%s: %d tools>" % (label, len(functions))

    Namespace.__name__ = Namespace.__qualname__ = label
    Namespace.__module__ = "__main__"
    return Namespace()


def _bridge(cfg, loop):
    pending = {}
    counter = [0]
    no_args = cfg["messages"]["noArgs"]
    args_prefix = cfg["messages"]["argsPrefix"]

    def raise_in(future, error_class, member, name, message):
        error = error_class(message)
        if member is not None:
            setattr(error, member, name)
        future.set_exception(error)

    def binding(index, name, error_class, member):
        name_json = _dumps(name)

        def call(*args, **kwargs):
            future = loop.create_future()
            if len(args) == 1 and not kwargs:
                value = args[0]
            elif not args and kwargs:
                value = kwargs
            else:
                raise_in(future, error_class, member, name, no_args)
                return future
            problem = _problem(value, "args")
            if problem is not None:
                raise_in(future, error_class, member, name, args_prefix + problem)
                return future
            try:
                text = _dumps(value)
            except RecursionError:
                raise_in(future, error_class, member, name, args_prefix + "nested too deeply")
                return future
            counter[0] += 1
            ident = counter[0]
            pending[ident] = (future, error_class, member, name)
            _write(('{"t":"call","id":%d,"ns":%d,"name":%s,"args":%s}\n' % (ident, index, name_json, text)).encode("ascii"))
            return future

        call.__name__ = call.__qualname__ = name
        return call

    def settle(line):
        try:
            head, tag, body = line.split(b" ", 2)
            entry = pending.pop(int(head), None)
        except ValueError:
            return
        if entry is None or entry[0].done():
            return
        future, error_class, member, name = entry
        try:
            value = json.loads(body)
        except RecursionError:
            raise_in(future, error_class, member, name, "the tool's result is nested too deeply for Python")
            return
        except MemoryError as error:
            future.set_exception(error)
            return
        except ValueError:
            return
        if tag == b"v":
            future.set_result(value)
        else:
            raise_in(future, error_class, member, name, value if isinstance(value, str) else "tool call failed")

    scope = {"__builtins__": builtins, "__name__": "__main__"}
    classes = {}
    for index, namespace in enumerate(cfg["namespaces"]):
        spec = namespace["errorClass"]
        if spec is None:
            error_class, member = Exception, None
        else:
            error_class = classes.get(spec["name"])
            if error_class is None:
                error_class = classes[spec["name"]] = _error_class(spec["name"], spec["member"])
            scope[spec["name"]] = error_class
            member = spec["member"]
        functions = {name: binding(index, name, error_class, member) for name in namespace["names"]}
        scope[namespace["global"]] = _namespace(namespace["global"], functions)

    return scope, settle


def _outcome(result, limit):
    if result is None:
        return b'{"t":"done"}\n'
    value = result[0]
    problem = _problem(value, "result")
    if problem is not None:
        return _error_line("invalid-output", problem)
    try:
        text = _dumps(value)
    except RecursionError:
        return _error_line("invalid-output", "nested too deeply")
    if len(text) > limit:
        size = len(_dumps(value, False).encode("utf-8", "surrogatepass"))
        if size > limit:
            return _error_line("result-size", str(size))
    return b'{"t":"done","value":' + text.encode("ascii") + b"}\n"


def _error_line(kind, message=None):
    body = {"t": "error", "kind": kind}
    if message is not None:
        body["message"] = message
    return (_dumps(body) + "\n").encode("ascii")


`

const PROCESS_HEAD: string = String.raw`import os, sys


def _init(child):
    for fd in (0, 1, 2, 3, 4):
        try:
            os.close(fd)
        except OSError:
            pass
    os.chdir("/")
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        except InterruptedError:
            continue
        if pid == child:
            if os.WIFSIGNALED(status):
                os._exit(128 + os.WTERMSIG(status))
            os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


if sys.argv[1:] == ["init"]:
    _child = os.fork()
    if _child != 0:
        _init(_child)
elif sys.argv[1:2] == ["drop"]:
    _uid, _gid = int(sys.argv[2]), int(sys.argv[3])
    try:
        os.setgroups([])
        os.setresgid(_gid, _gid, _gid)
        os.setresuid(_uid, _uid, _uid)
    except OSError:
        os._exit(75)
    if os.getresuid() != (_uid, _uid, _uid) or os.getresgid() != (_gid, _gid, _gid) or os.getgroups():
        os._exit(75)
    os.chdir(sys.argv[4])

`

const PROCESS_MAIN: string = String.raw`import asyncio, resource, signal

_FROM_HOST = 3
_TO_HOST = 4


def _write(data):
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(_TO_HOST, view):]
    except OSError:
        os._exit(71)


def _report(kind, message=None):
    _flush()
    _write(_error_line(kind, message))
    os._exit(0)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _on_cpu(signum, frame):
    _write(b'{"t":"error","kind":"timeout"}\n')
    os._exit(0)


def _read_config():
    data = bytearray()
    while True:
        chunk = os.read(_FROM_HOST, 1 << 16)
        if not chunk:
            os._exit(72)
        at = chunk.find(b"\n")
        if at >= 0:
            data += chunk[:at]
            return json.loads(data.decode("utf-8")), bytearray(chunk[at + 1:])
        data += chunk


def _limit(which, soft, hard=None):
    if hard is None:
        hard = soft
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        soft = min(soft, current)
        hard = min(hard, current)
    resource.setrlimit(which, (soft, hard))


def _apply_limits(cfg):
    cpu_seconds = max(1, -(-cfg["cpuMs"] // 1000))
    _limit(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)
    _limit(resource.RLIMIT_AS, cfg["memoryBytes"])
    _limit(resource.RLIMIT_NOFILE, cfg["openFiles"])
    _limit(resource.RLIMIT_FSIZE, cfg["fileBytes"])
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_NPROC, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGPROF, _on_cpu)
    sys.setrecursionlimit(cfg["recursionLimit"])


def _main():
    cfg, pending_input = _read_config()
    _apply_limits(cfg)
    os.dup2(1, 2)
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="backslashreplace")
    os.environ.clear()
    sys.argv = [_FILENAME]

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(lambda loop, context: None)

    def readable():
        try:
            chunk = os.read(_FROM_HOST, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            os._exit(73)
        if not chunk:
            os._exit(74)
        pending_input.extend(chunk)
        while True:
            at = pending_input.find(b"\n")
            if at < 0:
                return
            line = bytes(pending_input[:at])
            del pending_input[:at + 1]
            settle(line)

    scope, settle = _bridge(cfg, loop)

    os.set_blocking(_FROM_HOST, False)
    loop.add_reader(_FROM_HOST, readable)
    source, cpu_ms, result_bytes = cfg["program"], cfg["cpuMs"], cfg["resultBytes"]
    del cfg
    signal.setitimer(signal.ITIMER_PROF, cpu_ms / 1000.0)
    try:
        result = loop.run_until_complete(_compile(source, scope)())
    except MemoryError:
        _write(b'{"t":"error","kind":"memory"}\n')
        os._exit(0)
    except RecursionError as error:
        _report("stack", _exception_text(error))
    except BaseException as error:
        _report("exception", _exception_text(error))
    _finish(result, result_bytes)


def _finish(result, limit):
    _flush()
    _write(_outcome(result, limit))
    os._exit(0)


_main()
`

/** @internal */
export const RUNNER_SOURCE: string = PROCESS_HEAD + RUNNER_CORE + PROCESS_MAIN
