/**
 * Registry lookup and projection cost: `unsafeView(agent).get(name)` and `schemas(agent)` for 10,
 * 100 and 1,000 tools across a 3-deep agent chain with restrictions, on a cached view (nothing
 * changed) and on the first call after a change (view rebuilt).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as InMemoryToolRegistry from "../layers/InMemoryToolRegistry.js"
import type * as Tool from "../src/Tool.js"
import type * as ToolRegistry from "../src/ToolRegistry.js"

const def = (name: string): Tool.ToolDefinition<never> => ({
  name,
  description: `The ${name} tool.`,
  parameters: {
    type: "object",
    properties: { path: { type: "string", description: "A path" }, limit: { type: "integer" } },
    required: ["path"]
  },
  output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: String(value) }] },
  execute: () => Effect.succeed(name)
})

interface Fixture {
  readonly registry: ToolRegistry.Service
  readonly names: ReadonlyArray<string>
  readonly scope: Scope.CloseableScope
}

const setup = (size: number): Promise<Fixture> =>
  Effect.runPromise(Effect.gen(function*() {
    const scope = yield* Scope.make()
    const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Scope.extend(effect, scope)
    const registry = yield* InMemoryToolRegistry.make()
    yield* run(registry.declareAgent("root"))
    yield* run(registry.declareAgent("mid", { parent: "root" }))
    yield* run(registry.declareAgent("leaf", { parent: "mid" }))
    const names: Array<string> = []
    for (let i = 0; i < size; i++) {
      const name = `tool_${i}`
      names.push(name)
      yield* run(registry.register(def(name)))
    }
    const tenth = Math.max(1, Math.floor(size / 10))
    for (let i = 0; i < tenth; i++) yield* run(registry.register(def(`tool_${i}`), { agent: "mid" }))
    for (let i = 0; i < tenth; i++) yield* run(registry.register(def(`leaf_${i}`), { agent: "leaf" }))
    yield* run(registry.restrict({ deny: names.slice(0, tenth) }, { agent: "root" }))
    yield* run(registry.restrict({ allow: names.slice(0, size - tenth) }, { agent: "mid" }))
    yield* run(registry.restrict({ deny: [names[size - 1]] }, { agent: "leaf" }))
    return { registry, names, scope }
  }))

const time = (iterations: number, body: (i: number) => void): number => {
  const start = performance.now()
  for (let i = 0; i < iterations; i++) body(i)
  return ((performance.now() - start) * 1e6) / iterations
}

/** Invalidates every cached view through the public API (a guard registered and removed). */
const change = (registry: ToolRegistry.Service): void => {
  const scope = Effect.runSync(Scope.make())
  Effect.runSync(Scope.extend(registry.guard(() => undefined), scope))
  Effect.runSync(Scope.close(scope, Exit.void))
}

const measureAfterChange = (registry: ToolRegistry.Service, iterations: number, call: () => void): number => {
  let total = 0
  for (let i = 0; i < iterations; i++) {
    change(registry)
    const start = performance.now()
    call()
    total += performance.now() - start
  }
  return (total * 1e6) / iterations
}

interface Row {
  readonly size: number
  readonly getCached: number
  readonly getAfter: number
  readonly schemasCached: number
  readonly schemasAfter: number
}

const fmt = (ns: number): string => ns >= 10_000 ? `${(ns / 1000).toFixed(1)} µs` : `${ns.toFixed(0)} ns`

/**
 * @since 0.1.0
 */
export const run = async (): Promise<void> => {
  const rows: Array<Row> = []
  for (const size of [10, 100, 1000, 10, 100, 1000]) {
    const { names, registry, scope } = await setup(size)
    const lookups = 200_000
    const schemaCalls = Math.max(200, Math.floor(200_000 / size))
    const afterCalls = Math.max(100, Math.floor(20_000 / size))
    const view = () => registry.unsafeView("leaf")
    time(lookups, (i) => view().get(names[i % size]))
    const getCached = time(lookups, (i) => view().get(names[i % size]))
    const getAfter = measureAfterChange(registry, afterCalls, () => view().get(names[0]))
    const schemas = registry.schemas("leaf")
    time(schemaCalls, () => Effect.runSync(schemas))
    const schemasCached = time(schemaCalls, () => Effect.runSync(schemas))
    const schemasAfter = measureAfterChange(registry, afterCalls, () => Effect.runSync(schemas))
    rows.push({ size, getCached, getAfter, schemasCached, schemasAfter })
    if (rows.length > 3) rows.shift()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  const base = rows[0]
  const runSyncBaseline = time(200_000, () => Effect.runSync(Effect.void))
  console.log("registry: 3-deep agent chain, restrictions on every layer, view of the leaf agent")
  console.log(`(second pass after a warm-up pass; Effect.runSync(Effect.void) baseline: ${fmt(runSyncBaseline)})`)
  console.log("tools | get cached | get after change | schemas cached | schemas after change")
  for (const row of rows) {
    console.log(
      `${String(row.size).padStart(5)} | ${fmt(row.getCached)} (x${(row.getCached / base.getCached).toFixed(1)}) | ${
        fmt(row.getAfter)
      } (x${(row.getAfter / base.getAfter).toFixed(1)}) | ${fmt(row.schemasCached)} (x${
        (row.schemasCached / base.schemasCached).toFixed(1)
      }) | ${fmt(row.schemasAfter)} (x${(row.schemasAfter / base.schemasAfter).toFixed(1)})`
    )
  }
  const last = rows[rows.length - 1]
  console.log(
    `cached get grows x${(last.getCached / base.getCached).toFixed(1)} for x${last.size / base.size} tools ` +
      `(Map lookup on a cached view); a rebuild costs x${(last.getAfter / last.getCached).toFixed(0)} a cached get`
  )
}
