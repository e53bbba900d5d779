/**
 * One escape suite for every code runtime (issue 22 item 4, DECISIONS D-17, D-23): the same table
 * of escape and limit probes runs against QuickJS, the sandboxed Python subprocess and Pyodide.
 * Each probe expects a refusal (checked on the host side where it can be: the secret file stays
 * unread, the host file is not created, the server sees no connection, the host process survives
 * the signal) or a limit outcome of its D-17 kind. A probe that cannot apply to a runtime says
 * why, in the test's name.
 */
import type { Vitest } from "@effect/vitest"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Either } from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as CodeRuntimePyodide from "../layers/CodeRuntimePyodide.js"
import * as CodeRuntimePython from "../layers/CodeRuntimePython.js"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import type { CodeRunResult } from "../src/CodeRuntime.js"
import { CodeRuntime } from "../src/CodeRuntime.js"
import { tools } from "./fixtures/quickjs.js"

const LIMITS = { cpuMs: 600, wallMs: 30_000, consoleBytes: 4096, maxToolCalls: 20 }

const secret = randomBytes(12).toString("hex")
const secretFile = join(tmpdir(), `etr-escape-secret-${secret}`)
const writeTarget = join(tmpdir(), `etr-escape-write-${secret}`)
writeFileSync(secretFile, `the secret ${secret}\n`)
process.env.ETR_ESCAPE_SECRET = secret

const server = createServer((socket) => {
  connections++
  socket.destroy()
})
let connections = 0
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const port = (server.address() as { port: number }).port
server.unref()
const sleeper = spawn("sleep", ["120"], { stdio: "ignore", detached: true })
sleeper.unref()
const sleeperAlive = () => {
  try {
    process.kill(sleeper.pid!, 0)
    return true
  } catch {
    return false
  }
}

type Runtime = "quickjs" | "python" | "pyodide"

interface Probe {
  readonly name: string
  /** The program per language; a string for a runtime, or `{ notApplicable }` saying why not. */
  readonly ts: string | { readonly notApplicable: string }
  readonly py: string | { readonly notApplicable: string }
  readonly pyodide?: string | { readonly notApplicable: string }
  /** The outcome the probe expects (throws an assertion when it does not hold). */
  readonly expect: (result: CodeRunResult, runtime: Runtime) => void
}

const kind = (result: CodeRunResult) => result.error?.kind ?? "ok"
const refused = (result: CodeRunResult, value: unknown) => {
  if (result.error === undefined) assert.deepStrictEqual(result.value, value)
  else assert.include(["exception"], result.error.kind, JSON.stringify(result))
}

const PROBES: ReadonlyArray<Probe> = [
  {
    name: "host files: reading a host file by its exact path is refused",
    ts: "try { await import('node:fs'); return 'imported' } catch { return 'refused' }",
    py: `try:\n    return 'read' if '${secret}' in open('${secretFile}').read() else 'other'\nexcept OSError:\n    return 'refused'`,
    expect: (result) => refused(result, "refused")
  },
  {
    name: "host files: writing a host path creates nothing on the host",
    ts: "return typeof require + typeof process",
    py: `try:\n    open('${writeTarget}', 'w').write('x')\nexcept OSError:\n    pass\nreturn 'tried'`,
    expect: (result, runtime) => {
      assert.isFalse(existsSync(writeTarget), "the host file was not created")
      if (runtime === "quickjs") assert.deepStrictEqual(result.value, "undefinedundefined")
    }
  },
  {
    name: "processes: starting a process is refused",
    ts: { notApplicable: "the engine has no process API at all (no require, no process): nothing to call" },
    py: "import subprocess\ntry:\n    subprocess.run(['id'])\n    return 'started'\nexcept Exception:\n    return 'refused'",
    expect: (result) => refused(result, "refused")
  },
  {
    name: "network: connecting to a host server is refused and the server sees nothing",
    ts: "return [typeof fetch, typeof WebSocket, typeof XMLHttpRequest].join()",
    py: `import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=2).close()\n    return 'connected'\nexcept Exception:\n    return 'refused'`,
    expect: (result, runtime) => {
      assert.strictEqual(connections, 0)
      refused(result, runtime === "quickjs" ? "undefined,undefined,undefined" : "refused")
    }
  },
  {
    name: "environment: the host's environment is not visible",
    ts: "return typeof process",
    py: `import os\nreturn [k for k, v in os.environ.items() if '${secret}' in v or k == 'ETR_ESCAPE_SECRET']`,
    expect: (result, runtime) => refused(result, runtime === "quickjs" ? "undefined" : [])
  },
  {
    name: "signals: killing a host process is refused and it survives",
    ts: { notApplicable: "the engine has no process or signal API: nothing to call" },
    py: `import os\ntry:\n    os.kill(${sleeper.pid}, 9)\nexcept Exception:\n    pass\ntry:\n    os.kill(os.getppid(), 9)\nexcept Exception:\n    pass\nreturn 'tried'`,
    expect: () => assert.isTrue(sleeperAlive(), "the host process is alive")
  },
  {
    name: "host objects: no FFI module imports; a JS object reached anyway cannot run code from strings",
    ts: "const F = tools.echo.constructor\nreturn [F('return typeof process')(), F('return typeof require')()].join()",
    py: { notApplicable: "a separate OS process: no host objects exist in it (files, processes and signals are probed above)" },
    pyodide: [
      "import sys, gc",
      "out = []",
      "for name in ('js', 'pyodide_js', 'pyodide.ffi'):",
      "    try:",
      "        __import__(name)",
      "        out.append('imported ' + name)",
      "    except ImportError:",
      "        out.append('no ' + name)",
      "proxy = getattr(sys.modules.get('pyodide.webloop'), 'scheduleCallback', None)",
      "if proxy is None:",
      "    proxy = next((o for o in gc.get_objects() if type(o).__name__.startswith('Js')), None)",
      "try:",
      "    out.append(str(proxy.constructor('return typeof process')()))",
      "except Exception as e:",
      "    out.append(type(e).__name__)",
      "return out"
    ].join("\n"),
    expect: (result, runtime) => {
      if (runtime === "quickjs") return assert.deepStrictEqual(result.value, "undefined,undefined")
      const value = result.value as ReadonlyArray<string>
      assert.deepStrictEqual(value.slice(0, 2), ["no js", "no pyodide_js"])
      assert.notInclude(["object", "function", "undefined"], value[3], "code from strings never runs in the realm")
      assert.strictEqual(value[3], "JsException")
    }
  },
  {
    name: "memory: a retained allocation flood ends as memory",
    ts: "const a = []\nwhile (true) a.push(new Uint8Array(1 << 20))",
    py: "x = []\nwhile True:\n    x.append(bytearray(1 << 20))",
    expect: (result) => assert.strictEqual(kind(result), "memory")
  },
  {
    name: "cpu: an endless loop ends as timeout",
    ts: "while (true) {}",
    py: "while True:\n    pass",
    expect: (result) => assert.strictEqual(kind(result), "timeout")
  },
  {
    name: "stack: unbounded recursion ends as memory",
    ts: "const f = (n) => f(n + 1) + 1\nf(0)",
    py: "def f(n):\n    return f(n + 1) + 1\nf(0)",
    expect: (result) => assert.strictEqual(kind(result), "memory")
  },
  {
    name: "output: a console flood ends as output-limit",
    ts: "while (true) console.log('x'.repeat(100))",
    py: "while True:\n    print('x' * 100)",
    expect: (result) => assert.strictEqual(kind(result), "output-limit")
  },
  {
    name: "calls: a tool-call flood ends as call-limit",
    ts: "for (let i = 0; i < 100; i++) await tools.echo({ i })",
    py: "for i in range(100):\n    await tools.echo({'i': i})",
    expect: (result) => assert.strictEqual(kind(result), "call-limit")
  }
]

const LEAK = {
  ts: ["globalThis.leaked = 42\nObject.prototype.polluted = 1\nreturn 'set'", "return [typeof leaked, typeof ({}).polluted].join()"],
  py: [
    "import builtins, sys\nbuiltins.leaked = 42\nsys.modules['leaky'] = sys\nopen('leak.txt', 'w').close()\nreturn 'set'",
    "import builtins, os, sys\nreturn [hasattr(builtins, 'leaked'), 'leaky' in sys.modules, os.path.exists('leak.txt')]"
  ],
  expected: { quickjs: "undefined,undefined", python: [false, false, false], pyodide: [false, false, false] }
} as const

const echo = tools({ echo: (args) => Effect.succeed(args) })

const run = (program: string) => Effect.flatMap(CodeRuntime, (runtime) => runtime.run({ program, bindings: [echo] }))

const suite = (runtime: Runtime) => (it: Vitest.MethodsNonLive<CodeRuntime>) => {
  for (const probe of PROBES) {
    const program = runtime === "quickjs" ? probe.ts : runtime === "pyodide" ? probe.pyodide ?? probe.py : probe.py
    if (typeof program !== "string") {
      it.skip(`${probe.name} — not applicable: ${program.notApplicable}`, () => {})
      continue
    }
    it.effect(`D-17/D-23 ${runtime}: ${probe.name}`, () =>
      Effect.gen(function*() {
        probe.expect(yield* run(program), runtime)
      }))
  }
  it.effect(`D-17 ${runtime}: state: nothing one run leaves behind reaches the next run`, () =>
    Effect.gen(function*() {
      const [first, second] = runtime === "quickjs" ? LEAK.ts : LEAK.py
      assert.deepStrictEqual((yield* run(first!)).value, "set")
      assert.deepStrictEqual((yield* run(second!)).value, LEAK.expected[runtime])
    }))
}

layer(CodeRuntimeQuickJs.layer({ ...LIMITS, memoryBytes: 32 * 1024 * 1024 }), { timeout: 60_000 })(
  "escape suite: CodeRuntimeQuickJs",
  suite("quickjs")
)

const probed = await Effect.runPromise(Effect.either(CodeRuntimePython.probe()))
const sandbox = Either.isRight(probed) && probed.right.levels.includes("bwrap") ? probed.right : undefined

if (sandbox !== undefined) {
  layer(CodeRuntimePython.layer({ environment: sandbox, limits: LIMITS }), { timeout: 60_000 })(
    "escape suite: CodeRuntimePython (sandbox)",
    suite("python")
  )
} else {
  describe("escape suite: CodeRuntimePython (sandbox)", () => {
    it.skip(
      `every probe — not applicable: the sandbox does not work here, so the layer refuses to build (${
        Either.isLeft(probed) ? probed.left.message : probed.right.unavailable.bwrap ?? "unknown"
      })`,
      () => {}
    )
  })
}

layer(CodeRuntimePyodide.layer({ limits: LIMITS, poolSize: 2 }), { timeout: 120_000 })(
  "escape suite: CodeRuntimePyodide",
  suite("pyodide")
)

describe("escape suite: clean-up", () => {
  it("the secret file is still only the host's", () => {
    rmSync(secretFile, { force: true })
    rmSync(writeTarget, { force: true })
    delete process.env.ETR_ESCAPE_SECRET
    assert.isTrue(sleeperAlive())
    process.kill(sleeper.pid!, "SIGKILL")
  })
})
