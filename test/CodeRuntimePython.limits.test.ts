/**
 * The Python code runtime's limits, stops and isolation (spec §18.3 RT-3, RT-6, DECISIONS
 * D-17): every limit ends with its kind (never `exception`) and the next run works; abort,
 * interruption and scope close kill the process and wait for it; no network under `unshare`, a
 * read-only filesystem under `bwrap`. Skipped as a whole when no usable python3 is found; the
 * namespace and bubblewrap cases skip when those are not available.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Fiber, Ref, Scope, TestClock } from "effect"
import { existsSync, readdirSync, readlinkSync } from "node:fs"
import { createServer } from "node:net"
import * as CodeRuntimePython from "../layers/CodeRuntimePython.js"
import type { Binding, Namespace } from "../src/CodeRuntime.js"

const probed = await Effect.runPromise(Effect.either(CodeRuntimePython.probe()))
const environment = Either.isRight(probed) ? probed.right : undefined
const levels = environment?.levels ?? []
const title = Either.isRight(probed)
  ? `CodeRuntimePython limits (isolation ${levels.includes("bwrap") ? "bwrap" : "process-trusted-code-only: bwrap does not work here"})`
  : `CodeRuntimePython limits (skipped: no usable python3 here — ${probed.left.message})`

const tools = (functions: Record<string, Binding>): Namespace => ({
  global: "tools",
  functions,
  errorClass: { name: "ToolCallError", memberNameProperty: "toolName" }
})

/** The sandbox where it works here; otherwise these tests name the weaker level explicitly. */
const LEVEL: CodeRuntimePython.IsolationLevel = levels.includes("bwrap") ? "bwrap" : "process-trusted-code-only"

const runtime = (options: Omit<CodeRuntimePython.Options, "environment"> = {}) =>
  CodeRuntimePython.make({ environment: environment!, isolation: LEVEL, ...options })

const healthy = (rt: CodeRuntimePython.PythonRuntime) =>
  Effect.gen(function*() {
    assert.deepStrictEqual(yield* rt.run({ program: "print('still fine')\nreturn 1", bindings: [] }), {
      value: 1,
      logs: ["still fine"]
    })
  })

/** Processes whose working directory is (or was) `dir`. */
const processesIn = (dir: string): Array<string> =>
  readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)
    } catch {
      return false
    }
  })

/** A binding that reports its arguments, then waits forever; `interrupted` turns true when it is stopped. */
const blocking = (entered: Deferred.Deferred<unknown>, interrupted: Ref.Ref<boolean>): Binding => (args) =>
  Effect.zipRight(Deferred.succeed(entered, args), Effect.never).pipe(Effect.onInterrupt(() => Ref.set(interrupted, true)))

describe.skipIf(environment === undefined)(title, () => {
  it.scoped.skipIf(!levels.includes("unshare-trusted-code-only"))(
    `RT-6: under unshare the program has no network; at process level the same program connects${
      levels.includes("unshare-trusted-code-only") ? "" : " (skipped: unshare -rn does not work here)"
    }`,
    () =>
      Effect.gen(function*() {
        let connections = 0
        const connected = yield* Deferred.make<void>()
        const server = createServer((socket) => {
          connections++
          socket.destroy()
          Deferred.unsafeDone(connected, Exit.void)
        })
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => {
            server.listen(0, "127.0.0.1", () => resume(Effect.void))
          }),
          () => Effect.sync(() => server.close())
        )
        const port = (server.address() as { port: number }).port
        const program = [
          "import socket",
          "try:",
          `    socket.create_connection(('127.0.0.1', ${port}), timeout=5).close()`,
          "    return 'connected'",
          "except OSError as e:",
          "    return 'refused: ' + type(e).__name__"
        ].join("\n")
        const isolated = yield* (yield* runtime({ isolation: "unshare-trusted-code-only" })).run({ program, bindings: [] })
        assert.deepStrictEqual(isolated, { value: "refused: OSError", logs: [] })
        const open = yield* (yield* runtime({ isolation: "process-trusted-code-only" })).run({ program, bindings: [] })
        assert.deepStrictEqual(open, { value: "connected", logs: [] })
        yield* Deferred.await(connected)
        assert.strictEqual(connections, 1)
      })
  )

  it.scoped.skipIf(!levels.includes("bwrap"))(
    `D-23: in the sandbox the root holds only the interpreter's files, read-only; the run's directory is the only writable place${
      levels.includes("bwrap") ? "" : " (skipped: bwrap is not installed or does not work here)"
    }`,
    () =>
      Effect.gen(function*() {
        const rt = yield* runtime({ isolation: "bwrap", maxFileBytes: 1024 })
        assert.strictEqual(rt.isolation, "container")
        const result = yield* rt.run({
          program: [
            "import os, sys",
            "out = []",
            "for path in ('/usr/etr-python-probe', os.path.dirname(os.getcwd()) + '/etr-python-probe', sys.prefix + '/x'):",
            "    try:",
            "        open(path, 'w')",
            "        out.append('wrote ' + path)",
            "    except OSError as e:",
            "        out.append(e.errno)",
            "with open('scratch', 'w') as f:",
            "    f.write('ok')",
            "out.append(open('scratch').read())",
            "for path in ('/etc/passwd', '/home', '/root/.npmrc', '/root/.gitconfig'):",
            "    out.append(os.path.exists(path))",
            "out.append(sorted(os.listdir('/')))",
            "return out"
          ].join("\n"),
          bindings: []
        })
        const view = environment!.sandbox!.view
        const root = [...new Set([...view.top, "dev", "proc", "tmp"])].sort()
        assert.deepStrictEqual(result, { value: [30, 30, 30, "ok", false, false, false, false, root], logs: [] })
      })
  )

  it.scoped("RT-6: an infinite loop, also after an await, ends as timeout on the CPU budget", () =>
    Effect.gen(function*() {
      const rt = yield* runtime({ limits: { cpuMs: 300 } })
      const loop = yield* rt.run({ program: "print('looping')\nwhile True:\n    pass", bindings: [] })
      assert.deepStrictEqual(loop, {
        logs: ["looping"],
        error: { kind: "timeout", message: "the program used more than 300 ms of CPU time" }
      })
      const afterAwait = yield* rt.run({
        program: "await tools.t({})\nwhile True:\n    pass",
        bindings: [tools({ t: () => Effect.succeed(1) })]
      })
      assert.deepStrictEqual(afterAwait.error, { kind: "timeout", message: "the program used more than 300 ms of CPU time" })
      yield* healthy(rt)
    }))

  it.scoped("RT-6: a program that disarms the CPU timer is still stopped by the CPU resource limit", () =>
    Effect.gen(function*() {
      const rt = yield* runtime({ limits: { cpuMs: 300 } })
      const result = yield* rt.run({
        program: "import signal\nsignal.setitimer(signal.ITIMER_PROF, 0)\nwhile True:\n    pass",
        bindings: []
      })
      assert.deepStrictEqual(result.error, { kind: "timeout", message: "the program used more than 300 ms of CPU time" })
      yield* healthy(rt)
    }))

  it.scoped("RT-6: the wall limit counts tool time and interrupts the binding still running", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<unknown>()
      const interrupted = yield* Ref.make(false)
      const rt = yield* runtime({ limits: { wallMs: 2_000 } })
      const fiber = yield* Effect.fork(rt.run({
        program: "await tools.wait({})",
        bindings: [tools({ wait: blocking(entered, interrupted) })]
      }))
      yield* Deferred.await(entered)
      yield* TestClock.adjust("2 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        logs: [],
        error: { kind: "timeout", message: "the run took longer than 2000 ms of wall time (tool calls included)" }
      })
      assert.isTrue(yield* Ref.get(interrupted))
    }))

  it.scoped("RT-6/D-17: a retained memory bomb ends as memory; deep recursion ends as memory (stack)", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const bomb = yield* rt.run({
        program: "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))",
        bindings: []
      })
      assert.deepStrictEqual(bomb.error, { kind: "memory", message: "the program exceeded the 64 MiB memory limit" })
      const deep = yield* rt.run({ program: "def f(n):\n    return f(n + 1) + 1\nf(0)", bindings: [] })
      assert.deepStrictEqual(deep.error, {
        kind: "memory",
        message: "the program exceeded the 1024-frame stack limit (RecursionError: maximum recursion depth exceeded (line 2))"
      })
      yield* healthy(rt)
    }))

  it.scoped("RT-6: a console flood ends as output-limit with the lines captured within the cap", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const flood = yield* rt.run({ program: "while True:\n    print('x' * 999)", bindings: [] })
      assert.deepStrictEqual(flood.error, { kind: "output-limit", message: "the program printed more than the 64 KiB console limit" })
      const bytes = flood.logs.reduce((sum, line) => sum + line.length + 1, 0)
      assert.isAtMost(bytes, 65536 + 1)
      assert.isAtLeast(flood.logs.length, 65)
      assert.isTrue(flood.logs.slice(0, 65).every((line) => line === "x".repeat(999)))
      yield* healthy(rt)
    }))

  it.scoped("RT-3: a result over the cap ends as output-limit", () =>
    Effect.gen(function*() {
      const rt = yield* runtime()
      const big = yield* rt.run({ program: "return 'x' * 2_000_000", bindings: [] })
      assert.deepStrictEqual(big, {
        logs: [],
        error: { kind: "output-limit", message: "the program's result is 2000002 bytes of JSON, over the 1 MiB result limit" }
      })
      yield* healthy(rt)
    }))

  it.scoped("D-17: more tool calls than maxToolCalls end as call-limit after exactly that many calls", () =>
    Effect.gen(function*() {
      let calls = 0
      const rt = yield* runtime({ limits: { maxToolCalls: 5 } })
      const result = yield* rt.run({
        program: "for i in range(10):\n    try:\n        await tools.t({'i': i})\n    except Exception:\n        pass",
        bindings: [tools({ t: () => Effect.sync(() => ++calls) })]
      })
      assert.deepStrictEqual(result.error, { kind: "call-limit", message: "the program made more than 5 tool calls" })
      assert.strictEqual(calls, 5)
      yield* healthy(rt)
    }))

  it.scoped("RT-5: calls beyond maxInFlight queue and start in submission order as slots free", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const names = ["a", "b", "c", "d"] as const
      const entered = yield* Effect.forEach(names, () => Deferred.make<void>())
      const release = yield* Effect.forEach(names, () => Deferred.make<void>())
      const functions: Record<string, Binding> = {}
      names.forEach((name, i) => {
        functions[name] = () =>
          Effect.gen(function*() {
            log.push(`enter ${name}`)
            yield* Deferred.succeed(entered[i]!, undefined)
            yield* Deferred.await(release[i]!)
            log.push(`exit ${name}`)
            return name
          })
      })
      const rt = yield* runtime({ limits: { maxInFlight: 2 } })
      const fiber = yield* Effect.fork(rt.run({
        program: "import asyncio\nreturn await asyncio.gather(tools.a({}), tools.b({}), tools.c({}), tools.d({}))",
        bindings: [tools(functions)]
      }))
      yield* Deferred.await(entered[0]!)
      yield* Deferred.await(entered[1]!)
      yield* Deferred.succeed(release[0]!, undefined)
      yield* Deferred.await(entered[2]!)
      yield* Deferred.succeed(release[1]!, undefined)
      yield* Deferred.await(entered[3]!)
      yield* Deferred.succeed(release[2]!, undefined)
      yield* Deferred.succeed(release[3]!, undefined)
      assert.deepStrictEqual(yield* Fiber.join(fiber), { value: ["a", "b", "c", "d"], logs: [] })
      assert.deepStrictEqual(log, ["enter a", "enter b", "exit a", "enter c", "exit b", "enter d", "exit c", "exit d"])
    }))

  it.scoped("RT-6: aborting the signal mid-run stops the program hard (abort) and interrupts its bindings", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<unknown>()
      const interrupted = yield* Ref.make(false)
      const rt = yield* runtime()
      const controller = new AbortController()
      const fiber = yield* Effect.fork(rt.run({
        program: "import os\nprint('started')\nawait tools.wait({'cwd': os.getcwd()})",
        bindings: [tools({ wait: blocking(entered, interrupted) })],
        signal: controller.signal
      }))
      const { cwd } = (yield* Deferred.await(entered)) as { cwd: string }
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        logs: ["started"],
        error: { kind: "abort", message: "the run was aborted" }
      })
      assert.isTrue(yield* Ref.get(interrupted))
      assert.isFalse(existsSync(cwd))
      assert.deepStrictEqual(processesIn(cwd), [])
      let called = false
      const pre = yield* rt.run({
        program: "await tools.t({})",
        bindings: [tools({ t: () => Effect.sync(() => (called = true)) })],
        signal: AbortSignal.abort()
      })
      assert.deepStrictEqual(pre, { logs: [], error: { kind: "abort", message: "the run was aborted" } })
      assert.isFalse(called)
      yield* healthy(rt)
    }))

  it.scoped("RT-6: interrupting the fiber that runs the program kills the process and waits for it", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<unknown>()
      const interrupted = yield* Ref.make(false)
      const rt = yield* runtime()
      const fiber = yield* Effect.fork(rt.run({
        program: "import os\nawait tools.wait({'cwd': os.getcwd()})",
        bindings: [tools({ wait: blocking(entered, interrupted) })]
      }))
      const { cwd } = (yield* Deferred.await(entered)) as { cwd: string }
      assert.deepStrictEqual(processesIn(cwd).length > 0, true)
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.isTrue(yield* Ref.get(interrupted))
      assert.deepStrictEqual(processesIn(cwd), [])
      assert.isFalse(existsSync(cwd))
      yield* healthy(rt)
    }))

  it.scoped("RT-6: closing the runtime's scope ends live runs (abort), waits for their processes, refuses new runs", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<unknown>()
      const interrupted = yield* Ref.make(false)
      const scope = yield* Scope.make()
      const rt = yield* Scope.extend(runtime(), scope)
      const fiber = yield* Effect.fork(rt.run({
        program: "import os\nawait tools.wait({'cwd': os.getcwd()})",
        bindings: [tools({ wait: blocking(entered, interrupted) })]
      }))
      const { cwd } = (yield* Deferred.await(entered)) as { cwd: string }
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(processesIn(cwd), [])
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        logs: [],
        error: { kind: "abort", message: "the code runtime was shut down" }
      })
      assert.isTrue(yield* Ref.get(interrupted))
      const refused = yield* Effect.flip(rt.run({ program: "return 1", bindings: [] }))
      assert.deepStrictEqual([refused._tag, refused.message], ["CodeRuntimeError", "the Python runtime is closed"])
    }))

  it.scoped("RT-6: a binding still running when the program returns is interrupted; its late result is dropped", () =>
    Effect.gen(function*() {
      const entered = yield* Deferred.make<unknown>()
      const interrupted = yield* Ref.make(false)
      const rt = yield* runtime()
      const result = yield* rt.run({
        program: "tools.slow({})\nawait tools.fast({})\nreturn 'returned'",
        bindings: [tools({
          slow: blocking(entered, interrupted),
          fast: () => Effect.as(Deferred.await(entered), 1)
        })]
      })
      assert.deepStrictEqual(result, { value: "returned", logs: [] })
      assert.isTrue(yield* Ref.get(interrupted))
    }))

  it.scoped("RT-6: the source, protocol-message, file-size and open-file limits hold", () =>
    Effect.gen(function*() {
      const small = yield* runtime({ limits: { sourceBytes: 200 } })
      const source = yield* small.run({ program: `return '${"x".repeat(300)}'`, bindings: [] })
      assert.deepStrictEqual(source, {
        logs: [],
        error: { kind: "output-limit", message: "the program is 309 bytes, over the 200 bytes source limit" }
      })
      const rt = yield* runtime({ maxMessageBytes: 4096 })
      const line = yield* rt.run({ program: "import os\nos.write(4, b'x' * 10000)\nawait tools.t({})", bindings: [] })
      assert.deepStrictEqual(line.error, {
        kind: "output-limit",
        message: "a message from the program is over the 4 KiB message limit"
      })
      const files = yield* rt.run({
        program: [
          "out = []",
          "try:",
          "    with open('f', 'w') as f:",
          "        f.write('x')",
          "except OSError as e:",
          "    out.append(e.errno)",
          "held = []",
          "try:",
          "    for i in range(100):",
          "        held.append(open('/dev/null'))",
          "except OSError as e:",
          "    out.append(e.errno)",
          "return out + [len(held) < 32]"
        ].join("\n"),
        bindings: []
      })
      assert.deepStrictEqual(files, { value: [27, 24, true], logs: [] })
    }))
})
