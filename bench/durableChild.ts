/**
 * The child process of the durable benchmark's kill-and-resume figure (bench/durable.ts):
 *
 *   node --import tsx bench/durableChild.ts run <url> <n>     runs a durable batch of n calls on the
 *     libSQL file `url`; call n/2 is an exclusive body that never ends (`replay: "never"`): the
 *     child prints `HANG` when it starts and waits to be SIGKILLed;
 *   node --import tsx bench/durableChild.ts resume <url>      a fresh process on the same file: builds
 *     the runner (which resumes the batch by itself), awaits the batch's result and prints one
 *     JSON line of timings (milliseconds since this process started).
 */
import { Effect, Exit, Layer, Scope } from "effect"
import * as DurableTurn from "../src/DurableTurn.js"
import * as Tool from "../src/Tool.js"
import { appOver, libsqlEngine } from "../test/fixtures/durable.js"

/** The batch the child runs and resumes. */
export const KEY = { sessionId: "bench-kill", batchId: "b1" } as const

const text = (value: string) => [{ type: "text" as const, text: value }]

/** An instant parallel-safe body, and the body that never ends. */
export const killTools: ReadonlyArray<Tool.Any> = [
  Tool.defineTool({
    name: "noop",
    description: "Returns at once.",
    parameters: { i: { type: "number", required: true } },
    output: { schema: { type: "number" }, render: (_args, value) => text(String(value)) },
    isConcurrencySafe: () => true,
    execute: (args) => Effect.succeed(args.i)
  }),
  Tool.defineTool({
    name: "hang",
    description: "Never returns.",
    parameters: {},
    output: { schema: { type: "string" }, render: (_args, value) => text(value) },
    replay: "never",
    execute: () =>
      Effect.zipRight(
        Effect.sync(() => process.stdout.write("HANG\n")),
        Effect.never
      )
  })
]

/** n calls, the middle one hangs. */
export const killCalls = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    i === Math.floor(n / 2)
      ? { callId: `c${i}`, name: "hang", arguments: "{}" }
      : { callId: `c${i}`, name: "noop", arguments: JSON.stringify({ i }) })

const main = async (argv: ReadonlyArray<string>): Promise<void> => {
  const [mode, url, count] = argv
  if (url === undefined) throw new Error("usage: durableChild.ts run|resume <url> [n]")
  if (mode === "run") {
    const n = Number(count ?? "1000")
    await Effect.runPromise(
      DurableTurn.runBatch(killCalls(n), { ...KEY, maxParallel: n }).pipe(
        Effect.provide(appOver(libsqlEngine(url), killTools))
      )
    )
    process.stdout.write("DONE\n")
    return
  }
  if (mode === "resume") {
    const started = performance.now()
    const program = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(appOver(libsqlEngine(url), killTools), scope)
      const ready = performance.now()
      const batch = yield* DurableTurn.resume(KEY).pipe(Effect.provide(context))
      const done = performance.now()
      yield* Scope.close(scope, Exit.void)
      const codes = new Map<string, number>()
      for (const { result } of batch.results) {
        const code = result.isError ? (result.error.info?.code ?? "error") : "ok"
        codes.set(code, (codes.get(code) ?? 0) + 1)
      }
      return { started, ready, done, results: batch.results.length, codes: Object.fromEntries(codes) }
    })
    const figures = await Effect.runPromise(program)
    process.stdout.write(`${JSON.stringify(figures)}\n`)
    return
  }
  throw new Error(`unknown mode ${String(mode)}`)
}

if (process.argv[1]?.endsWith("durableChild.ts")) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
}
