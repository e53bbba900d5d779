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

const resolve = <K extends MetricKeyType.MetricKeyType<number, unknown>>(
  key: MetricKey.MetricKey<K>,
  labels: ReadonlyArray<MetricLabel.MetricLabel>
): Hook => Metric.globalMetricRegistry.get(MetricKey.taggedWithLabels(key, labels)) as unknown as Hook

const activeHook = resolve(keys.activeCalls, [])

/** One (tool, outcome) pair's hooks. */
interface OutcomeSeries {
  readonly calls: Hook
  denials: Hook | undefined
}

/**
 * One tool's hooks, resolved on first use. The caches are bounded; past the bound a series is
 * still recorded, only not kept.
 *
 * @internal
 */
export class ToolSeries {
  private readonly outcomes = new Map<string, OutcomeSeries>()
  private durationHook: Hook | undefined = undefined
  private timeoutsHook: Hook | undefined = undefined
  private approvalHook: Hook | undefined = undefined
  private readonly label: MetricLabel.MetricLabel
  constructor(tool: string) {
    this.label = MetricLabel.make(TOOL_NAME, tool)
  }
  private outcome(outcome: string): OutcomeSeries {
    let series = this.outcomes.get(outcome)
    if (series === undefined) {
      series = { calls: resolve(keys.calls, [this.label, MetricLabel.make(OUTCOME, outcome)]), denials: undefined }
      if (this.outcomes.size < MAX_CACHED) this.outcomes.set(outcome, series)
    }
    return series
  }
  end(outcome: string, seconds: number, denied: boolean, timedOut: boolean): void {
    const series = this.outcome(outcome)
    series.calls.update(1)
    ;(this.durationHook ??= resolve(keys.callDuration, [this.label])).update(seconds)
    activeHook.modify(-1)
    if (denied) (series.denials ??= resolve(keys.denials, [this.label, MetricLabel.make(OUTCOME, outcome)])).update(1)
    if (timedOut) (this.timeoutsHook ??= resolve(keys.timeouts, [this.label])).update(1)
  }
  approval(seconds: number): void {
    ;(this.approvalHook ??= resolve(keys.approvalWait, [this.label])).update(seconds)
  }
}

const toolSeries = new Map<string, ToolSeries>()

/** @internal */
export const seriesOf = (tool: string): ToolSeries => {
  let series = toolSeries.get(tool)
  if (series === undefined) {
    series = new ToolSeries(tool)
    if (toolSeries.size < MAX_CACHED) toolSeries.set(tool, series)
  }
  return series
}

/** @internal */
export const recordActive = (delta: number, extra: ReadonlyArray<MetricLabel.MetricLabel>): void =>
  (extra.length === 0 ? activeHook : resolve(keys.activeCalls, extra)).modify(delta)

/** @internal */
export interface Ended {
  readonly tool: string
  readonly outcome: string
  readonly seconds: number
  readonly denied: boolean
  readonly timedOut: boolean
}

/**
 * Records a call's end; `extra` (the fiber's metric labels) bypasses the caches.
 *
 * @internal
 */
export const recordEnd = (ended: Ended, extra: ReadonlyArray<MetricLabel.MetricLabel>): void => {
  const { denied, outcome, seconds, timedOut, tool } = ended
  if (extra.length === 0) return seriesOf(tool).end(outcome, seconds, denied, timedOut)
  const byTool = [MetricLabel.make(TOOL_NAME, tool), ...extra]
  const byOutcome = [MetricLabel.make(TOOL_NAME, tool), MetricLabel.make(OUTCOME, outcome), ...extra]
  resolve(keys.calls, byOutcome).update(1)
  resolve(keys.callDuration, byTool).update(seconds)
  resolve(keys.activeCalls, extra).modify(-1)
  if (denied) resolve(keys.denials, byOutcome).update(1)
  if (timedOut) resolve(keys.timeouts, byTool).update(1)
}

/** @internal */
export const recordApprovalWait = (tool: string, seconds: number, extra: ReadonlyArray<MetricLabel.MetricLabel>): void => {
  if (extra.length === 0) return seriesOf(tool).approval(seconds)
  resolve(keys.approvalWait, [MetricLabel.make(TOOL_NAME, tool), ...extra]).update(seconds)
}
