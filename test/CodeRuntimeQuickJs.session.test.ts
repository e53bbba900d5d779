/**
 * The engine session below the layers (internal): an engine instance that dies mid-run ends the
 * run with `worker-exit` (D-17) and the host goes on; the wasm layout the stack limit relies on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { defaultLimits } from "../src/CodeRuntime.js"
import { loadEngine } from "../layers/internal/quickjs/engine.js"
import type { CallOutcome, Plan } from "../layers/internal/quickjs/session.js"
import { Session } from "../layers/internal/quickjs/session.js"
import { prepare } from "../layers/internal/quickjs/source.js"
import { stackHighOf } from "../layers/internal/quickjs/wasmLayout.js"

const limits = { ...defaultLimits, cpuMs: 2_000, memoryBytes: 32 * 1024 * 1024 }

const planOf = (program: string): Plan => {
  const prepared = prepare(program, limits, undefined)
  if (prepared._tag !== "Ready") throw new Error("not ready")
  return {
    code: prepared.code,
    filename: prepared.filename,
    lines: prepared.lines,
    namespaces: [{ global: "tools", names: ["x"], errorClass: null }],
    limits
  }
}

/** Runs `program` on a fresh instance; `onCall` answers each call (after the slice that made it). */
const runSession = (program: string, onCall: (memory: WebAssembly.Memory) => CallOutcome) =>
  Effect.promise(async () => {
    const instance = await (await loadEngine()).instantiate(limits.memoryBytes)
    let session: Session | undefined = undefined
    session = new Session(instance, planOf(program), {
      dispatch: (call) => queueMicrotask(() => session!.settle(call, onCall(instance.memory)))
    })
    return session.result
  })

describe("session", () => {
  it.effect("D-17: an instance whose memory is wrecked mid-run dies: worker-exit, and the next run works", () =>
    Effect.gen(function*() {
      const result = yield* runSession("await tools.x({})\nreturn 1", (memory) => {
        new Uint8Array(memory.buffer).fill(0xff)
        return { ok: true, text: "1" }
      })
      assert.strictEqual(result.error?.kind, "worker-exit")
      assert.match(result.error!.message, /^the engine instance died: /)
      assert.deepStrictEqual(
        yield* runSession("return await tools.x({})", () => ({ ok: true, text: "7" })),
        { value: 7, logs: [] }
      )
    }))

  it("the stack pointer's start is read from the module's first global", () => {
    const require = createRequire(import.meta.url)
    const bytes = new Uint8Array(readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")))
    const high = stackHighOf(bytes)
    assert.isDefined(high)
    assert.isAbove(high!, 5 * 1024 * 1024)
    assert.isUndefined(stackHighOf(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])))
    assert.isUndefined(stackHighOf(new Uint8Array([1, 2, 3])))
  })
})
