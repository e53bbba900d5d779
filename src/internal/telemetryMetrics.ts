/**
 * The `effect/Metric` instruments of tool calls. Updates go through registry hooks resolved once
 * per series (a metric key is hashed on every `Metric` update otherwise, which costs more than
 * a hook-less call itself).
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import type * as MetricHook from "effect/MetricHook"
import * as MetricKey from "effect/MetricKey"
import type * as MetricKeyType from "effect/MetricKeyType"
import * as MetricLabel from "effect/MetricLabel"

/** @internal */
export const TOOL_NAME = "gen_ai.tool.name"
/** @internal */
export const OUTCOME = "tool_runtime.outcome"
/** @internal */
export const OTHER_TOOL = "_OTHER"

const CALL_UNIT = [MetricLabel.make("unit", "{call}")]
const SECONDS = [MetricLabel.make("unit", "s")]

const durationBoundaries = MetricBoundaries.fromIterable([
  0.0001,
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  300
])

const approvalBoundaries = MetricBoundaries.fromIterable([0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600])

const keys = {
  calls: MetricKey.taggedWithLabels(
    MetricKey.counter("tool_runtime.calls", { description: "Tool calls by tool and outcome", incremental: true }),
    CALL_UNIT
  ),
  callDuration: MetricKey.taggedWithLabels(
    MetricKey.histogram("tool_runtime.call.duration", durationBoundaries, "Duration of tool calls"),
    SECONDS
  ),
  activeCalls: MetricKey.taggedWithLabels(
    MetricKey.gauge("tool_runtime.calls.active", { description: "Tool calls in flight" }),
    CALL_UNIT
  ),
  denials: MetricKey.taggedWithLabels(
    MetricKey.counter("tool_runtime.denials", { description: "Tool calls denied by policy", incremental: true }),
    CALL_UNIT
  ),
  timeouts: MetricKey.taggedWithLabels(
    MetricKey.counter("tool_runtime.timeouts", { description: "Tool calls that timed out", incremental: true }),
    CALL_UNIT
  ),
  approvalWait: MetricKey.taggedWithLabels(
    MetricKey.histogram("tool_runtime.approval.duration", approvalBoundaries, "Time spent waiting for approval"),
    SECONDS
  )
}

/** @internal */
export const calls = Metric.fromMetricKey(keys.calls)
/** @internal */
export const callDuration = Metric.fromMetricKey(keys.callDuration)
/** @internal */
export const activeCalls = Metric.fromMetricKey(keys.activeCalls)
/** @internal */
export const denials = Metric.fromMetricKey(keys.denials)
/** @internal */
export const timeouts = Metric.fromMetricKey(keys.timeouts)
/** @internal */
export const approvalWait = Metric.fromMetricKey(keys.approvalWait)

/** @internal */
export const forTool = <T, In, Out>(metric: Metric.Metric<T, In, Out>, tool: string): Metric.Metric<T, In, Out> =>
  Metric.tagged(metric, TOOL_NAME, tool)

/** @internal */
export const forToolAndOutcome = <T, In, Out>(
  metric: Metric.Metric<T, In, Out>,
  tool: string,
  outcome: string
): Metric.Metric<T, In, Out> => Metric.tagged(Metric.tagged(metric, TOOL_NAME, tool), OUTCOME, outcome)

type Hook = MetricHook.MetricHook<number, unknown>

const MAX_CACHED = 4096

/** Hooks by series; past the cap a series is resolved on each update instead of cached. */
const hookCache = <K extends MetricKeyType.MetricKeyType<number, unknown>>(key: MetricKey.MetricKey<K>) => {
  const cache = new Map<string, Hook>()
  return (id: string, labels: () => ReadonlyArray<MetricLabel.MetricLabel>, extra: ReadonlyArray<MetricLabel.MetricLabel>): Hook => {
    if (extra.length > 0) return resolve(key, [...labels(), ...extra])
    let hook = cache.get(id)
    if (hook === undefined) {
      hook = resolve(key, labels())
      if (cache.size < MAX_CACHED) cache.set(id, hook)
    }
    return hook
  }
}

const resolve = <K extends MetricKeyType.MetricKeyType<number, unknown>>(
  key: MetricKey.MetricKey<K>,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): Hook => Metric.globalMetricRegistry.get(MetricKey.taggedWithLabels(key, labels)) as unknown as Hook

const byTool = (tool: string) => () => [MetricLabel.make(TOOL_NAME, tool)]
const byToolAndOutcome = (tool: string, outcome: string) => () => [
  MetricLabel.make(TOOL_NAME, tool),
  MetricLabel.make(OUTCOME, outcome)
]

const callsHook = hookCache(keys.calls)
const durationHook = hookCache(keys.callDuration)
const denialsHook = hookCache(keys.denials)
const timeoutsHook = hookCache(keys.timeouts)
const approvalHook = hookCache(keys.approvalWait)
const activeHook = hookCache(keys.activeCalls)
const none = () => []

/** @internal */
export const recordActive = (delta: number, extra: ReadonlyArray<MetricLabel.MetricLabel>): void =>
  activeHook("", none, extra).modify(delta)

/** @internal */
export interface Ended {
  readonly tool: string
  readonly outcome: string
  readonly seconds: number
  readonly denied: boolean
  readonly timedOut: boolean
}

/** @internal */
export const recordEnd = (ended: Ended, extra: ReadonlyArray<MetricLabel.MetricLabel>): void => {
  const { outcome, tool } = ended
  const series = `${tool.length}:${tool}${outcome}`
  callsHook(series, byToolAndOutcome(tool, outcome), extra).update(1)
  durationHook(tool, byTool(tool), extra).update(ended.seconds)
  activeHook("", none, extra).modify(-1)
  if (ended.denied) denialsHook(series, byToolAndOutcome(tool, outcome), extra).update(1)
  if (ended.timedOut) timeoutsHook(tool, byTool(tool), extra).update(1)
}

/** @internal */
export const recordApprovalWait = (tool: string, seconds: number, extra: ReadonlyArray<MetricLabel.MetricLabel>): void =>
  approvalHook(tool, byTool(tool), extra).update(seconds)
