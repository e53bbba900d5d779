/**
 * The `effect/Metric` instruments of tool calls, and the label sets they are updated with.
 *
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricLabel from "effect/MetricLabel"

/** @internal */
export const TOOL_NAME = "gen_ai.tool.name"
/** @internal */
export const OUTCOME = "tool_runtime.outcome"
/** @internal */
export const OTHER_TOOL = "_OTHER"

const CALL_UNIT = "{call}"

const withUnit = <T, In, Out>(metric: Metric.Metric<T, In, Out>, unit: string): Metric.Metric<T, In, Out> =>
  Metric.tagged(metric, "unit", unit)

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

/** @internal */
export const calls = withUnit(
  Metric.counter("tool_runtime.calls", { description: "Tool calls by tool and outcome", incremental: true }),
  CALL_UNIT
)

/** @internal */
export const callDuration = withUnit(
  Metric.histogram("tool_runtime.call.duration", durationBoundaries, "Duration of tool calls"),
  "s"
)

/** @internal */
export const activeCalls = withUnit(
  Metric.gauge("tool_runtime.calls.active", { description: "Tool calls in flight" }),
  CALL_UNIT
)

/** @internal */
export const denials = withUnit(
  Metric.counter("tool_runtime.denials", { description: "Tool calls denied by policy", incremental: true }),
  CALL_UNIT
)

/** @internal */
export const timeouts = withUnit(
  Metric.counter("tool_runtime.timeouts", { description: "Tool calls that timed out", incremental: true }),
  CALL_UNIT
)

/** @internal */
export const approvalWait = withUnit(
  Metric.histogram("tool_runtime.approval.duration", approvalBoundaries, "Time spent waiting for approval"),
  "s"
)

/** @internal */
export const toolLabel = (tool: string): MetricLabel.MetricLabel => MetricLabel.make(TOOL_NAME, tool)

/** @internal */
export const outcomeLabel = (outcome: string): MetricLabel.MetricLabel => MetricLabel.make(OUTCOME, outcome)

/** @internal */
export const forTool = <T, In, Out>(metric: Metric.Metric<T, In, Out>, tool: string): Metric.Metric<T, In, Out> =>
  Metric.tagged(metric, TOOL_NAME, tool)

/** @internal */
export const forToolAndOutcome = <T, In, Out>(
  metric: Metric.Metric<T, In, Out>,
  tool: string,
  outcome: string
): Metric.Metric<T, In, Out> => Metric.tagged(Metric.tagged(metric, TOOL_NAME, tool), OUTCOME, outcome)
