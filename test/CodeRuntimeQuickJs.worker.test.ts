/**
 * The QuickJS runtime hosted in a worker-thread pool (`layerWorker`): the same engine and seam
 * (RT-1…6), bindings as messages to the caller's fibers, guest CPU off the caller's event loop
 * (stops land mid-loop), a dying worker (D-17 `worker-exit`) replaced, and scope close
 * terminating every worker.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as CodeRuntimeQuickJs from "../layers/CodeRuntimeQuickJs.js"
import { readConfig } from "../layers/internal/quickjs/options.js"
import * as InWorkers from "../layers/internal/quickjs/inWorkers.js"
import type { Pool } from "../layers/internal/quickjs/workerPool.js"
import type { Binding } from "../src/CodeRuntime.js"
import { CodeRuntime } from "../src/CodeRuntime.js"
import { gated, recording, run, tools } from "./fixtures/quickjs.js"

/** A real host timer: the caller's event loop is free when it fires. */
const hostTimer = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** A binding that marks the moment the program is about to spin. */
const entering = Effect.map(Deferred.make<void>(), (entered) => ({
  entered,
  binding: (() => Effect.as(Deferred.succeed(entered, undefined), "go")) as Binding
}))

const SPIN = "await tools.enter({})\nlet n = 0\nwhile (true) { n++ }"

layer(CodeRuntimeQuickJs.layerWorker({ cpuMs: 20_000, wallMs: 30_000, poolSize: 2 }))("layerWorker", (it) => {
  it.effect("RT-1, RT-2: a run in a worker: typescript in wasm, values and TypeScript errors as in-thread", () =>
    Effect.gen(function*() {
      const runtime = yield* CodeRuntime
      assert.strictEqual(runtime.language, "typescript")
      assert.strictEqual(runtime.isolation, "wasm")
      assert.deepStrictEqual(yield* run("const x: number = 41\nconsole.log('hi')\nreturn { x: x + 1 }"), {
        value: { x: 42 },
        logs: ["hi"]
      })
      assert.deepStrictEqual((yield* run("enum E { A }")).error?.kind, "exception")
      assert.deepStrictEqual((yield* run("\nnull.x")).error, {
        kind: "exception",
        message: "TypeError: cannot read property 'x' of null (line 2, column 5)"
      })
    }))

  it.effect("RT-5: bindings cross as messages: JSON round trip, failures as the error class, lossless rejections", () =>
    Effect.gen(function*() {
      const { binding, calls, failing } = recording()
      const result = yield* run(
        "const back = await tools.echo({ s: 'é\\u0000', n: [1, 2] })\n" +
          "let failed\ntry { await tools.fail({}) } catch (e) { failed = [e instanceof ToolCallError, e.toolName, e.message] }\n" +
          "let lossy\ntry { await tools.echo({ n: 1n }) } catch (e) { lossy = e.message }\n" +
          "return { back, failed, lossy }",
        [tools({ echo: binding("echo"), fail: failing("fail", "deliberate failure") })]
      )
      assert.deepStrictEqual(result.value, {
        back: { s: "é\u0000", n: [1, 2] },
        failed: [true, "fail", "deliberate failure"],
        lossy: "tool arguments must be lossless JSON: a bigint at args.n"
      })
      assert.deepStrictEqual(calls.map((call) => call.name), ["echo", "fail"])
    }))

  it.effect("RT-5: Promise.all over two bindings overlaps in the worker too", () =>
    Effect.gen(function*() {
      const gate = yield* gated
      const fiber = yield* Effect.fork(run("return await Promise.all([tools.g({ n: 1 }), tools.g({ n: 2 })])", [tools({ g: gate.binding })]))
      yield* gate.awaitStart(0)
      yield* gate.awaitStart(1)
      yield* gate.release(0)
      yield* gate.release(1)
      assert.deepStrictEqual(yield* Fiber.join(fiber), { value: [{ n: 1 }, { n: 2 }], logs: [] })
    }))

  it.effect("RT-6: while the guest spins, the caller's event loop runs; an abort then stops the loop mid-flight", () =>
    Effect.gen(function*() {
      const { entered, binding } = yield* entering
      const controller = new AbortController()
      const start = performance.now()
      const fiber = yield* Effect.fork(run(SPIN, [tools({ enter: binding })], controller.signal))
      yield* Deferred.await(entered)
      yield* hostTimer(20)
      yield* hostTimer(20)
      controller.abort()
      assert.deepStrictEqual(yield* Fiber.join(fiber), { logs: [], error: { kind: "abort", message: "the run was aborted" } })
      assert.isBelow(performance.now() - start, 10_000)
      assert.deepStrictEqual(yield* run("return 'next'"), { value: "next", logs: [] })
    }))

  it.effect("RT-6: interrupting the caller's fiber stops a spinning guest", () =>
    Effect.gen(function*() {
      const { entered, binding } = yield* entering
      const fiber = yield* Effect.fork(run(SPIN, [tools({ enter: binding })]))
      yield* Deferred.await(entered)
      yield* hostTimer(10)
      assert.isTrue(Exit.isInterrupted(yield* Fiber.interrupt(fiber)))
      assert.deepStrictEqual(yield* run("return 'next'"), { value: "next", logs: [] })
    }))

  it.effect("D-17: the wall limit (on Effect's Clock) stops a spinning guest with timeout", () =>
    Effect.gen(function*() {
      const { entered, binding } = yield* entering
      const fiber = yield* Effect.fork(run(SPIN, [tools({ enter: binding })]))
      yield* Deferred.await(entered)
      yield* TestClock.adjust("30 seconds")
      assert.deepStrictEqual((yield* Fiber.join(fiber)).error, {
        kind: "timeout",
        message: "the run took longer than 30000 ms of wall time (tool calls included)"
      })
    }))

  it.effect("D-17: limits hold in a worker: memory, stack, call count, console", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* run("const kept = []\nwhile (true) kept.push(new Uint8Array(1 << 20))")).error?.kind, "memory")
      assert.strictEqual((yield* run("function f() { return f() + 1 }\ntry { f() } catch {}")).error?.kind, "memory")
      const { binding, calls } = recording()
      assert.strictEqual((yield* run("for (let i = 0; i < 300; i++) await tools.x({ i })", [tools({ x: binding("x") })])).error?.kind, "call-limit")
      assert.strictEqual(calls.length, 256)
      assert.strictEqual((yield* run("while (true) console.log('x'.repeat(1000))")).error?.kind, "output-limit")
    }))
})

describe("worker lifecycle", () => {
  const config = (() => {
    const read = readConfig({ cpuMs: 20_000 })
    if ("problem" in read) throw new Error(read.problem)
    return read.config
  })()

  it.effect("D-17: a worker that dies mid-run ends that run with worker-exit; it is replaced and the next run works", () =>
    Effect.gen(function*() {
      let pool: Pool | undefined
      const scope = yield* Scope.make()
      const runtime = yield* Scope.extend(InWorkers.make(config, { poolSize: 1, onPool: (p) => (pool = p) }), scope)
      const { entered, binding } = yield* entering
      const fiber = yield* Effect.fork(runtime.run({ program: SPIN, bindings: [tools({ enter: binding })] }))
      yield* Deferred.await(entered)
      const [victim] = pool!.members()
      yield* Effect.promise(() => victim.worker.terminate())
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.error?.kind, "worker-exit")
      assert.strictEqual(result.error?.message, "the worker thread exited with code 1")
      assert.deepStrictEqual(yield* runtime.run({ program: "return 'next'", bindings: [] }), { value: "next", logs: [] })
      assert.notStrictEqual(pool!.members()[0], victim)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("RT-6: closing the scope stops live runs (abort), terminates every worker and waits for it to exit", () =>
    Effect.gen(function*() {
      let pool: Pool | undefined
      const scope = yield* Scope.make()
      const runtime = yield* Scope.extend(InWorkers.make(config, { poolSize: 2, onPool: (p) => (pool = p) }), scope)
      const { entered, binding } = yield* entering
      const fiber = yield* Effect.fork(runtime.run({ program: SPIN, bindings: [tools({ enter: binding })] }))
      yield* Deferred.await(entered)
      const members = pool!.members()
      assert.strictEqual(members.length, 2)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        logs: [],
        error: { kind: "abort", message: "the code runtime was shut down" }
      })
      assert.deepStrictEqual(members.map((member) => [member.alive, member.worker.threadId]), [[false, -1], [false, -1]])
      assert.strictEqual(pool!.members().length, 0)
      const refused = yield* Effect.flip(runtime.run({ program: "return 1", bindings: [] }))
      assert.strictEqual(refused.message, "the code runtime is shut down")
    }))

  it.effect("runs beyond the pool wait for a free worker", () =>
    Effect.gen(function*() {
      let pool: Pool | undefined
      const runtime = yield* InWorkers.make(config, { poolSize: 1, onPool: (p) => (pool = p) })
      const gate = yield* gated
      const first = yield* Effect.fork(runtime.run({ program: "return await tools.g({ n: 1 })", bindings: [tools({ g: gate.binding })] }))
      yield* gate.awaitStart(0)
      const second = yield* Effect.fork(runtime.run({ program: "return await tools.g({ n: 2 })", bindings: [tools({ g: gate.binding })] }))
      while (pool!.waiting() === 0) yield* Effect.yieldNow()
      assert.strictEqual(gate.calls(), 1)
      yield* gate.release(0)
      assert.deepStrictEqual(yield* Fiber.join(first), { value: { n: 1 }, logs: [] })
      assert.deepStrictEqual(yield* gate.awaitStart(1), { n: 2 })
      assert.strictEqual(pool!.waiting(), 0)
      yield* gate.release(1)
      assert.deepStrictEqual(yield* Fiber.join(second), { value: { n: 2 }, logs: [] })
    }).pipe(Effect.scoped))

  it.effect("invalid worker options fail the layer", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(Layer.build(CodeRuntimeQuickJs.layerWorker({ poolSize: 0 }))))
      assert.strictEqual(error.message, "invalid CodeRuntimeQuickJs options: poolSize must be an integer from 1 to 256")
    }))
})
