/**
 * The durable preset assembled (loaded only when `Presets.layerDurable` is built, since it needs
 * the optional peers): the approval preset over the durable log, the durable service over it, and
 * the single-node engine with the journal on a libSQL file beneath everything.
 *
 * @internal
 */
import * as Layer from "effect/Layer"
import * as DurableTurn from "../../../src/DurableTurn.js"
import * as DurableTurnSql from "../../DurableTurnSql.js"
import { approvalLayer, assemble } from "./assemble.js"
import type { APPROVAL_KEYS, DurableSettings, Read } from "./options.js"

/** The engine beneath a durable preset: the single-node runner with the journal on a libSQL file. @internal */
export const libsqlEngine = (
  settings: DurableSettings & { readonly url: string; readonly authToken: unknown }
): Layer.Layer<never, unknown, unknown> =>
  DurableTurnSql.layerLibsql({
    url: settings.url,
    ...(typeof settings.authToken === "string" ? { authToken: settings.authToken } : {}),
    ...(settings.pollInterval === undefined ? {} : { pollInterval: settings.pollInterval as never })
  }) as Layer.Layer<never, unknown, unknown>

/** @internal */
export const assembleDurable = (
  label: string,
  read: Read,
  values: Readonly<Record<(typeof APPROVAL_KEYS)[number], unknown>>,
  settings: DurableSettings,
  engine: Layer.Layer<never, unknown, unknown>
): Layer.Layer<never, unknown, unknown> | string => {
  const approval = approvalLayer(label, { ...values, interactive: undefined })
  if (typeof approval === "string") return approval
  const assembled = assemble({ ...read, log: DurableTurn.layerLog, approval })
  const runtime = settings.setup === undefined ? assembled : settings.setup.pipe(Layer.provideMerge(assembled))
  const durable = DurableTurn.layer({
    ...(settings.pollInterval === undefined ? {} : { pollInterval: settings.pollInterval as never }),
    ...(settings.approvalTimeout === undefined ? {} : { approvalTimeout: settings.approvalTimeout as never })
  })
  return durable.pipe(
    Layer.provideMerge(runtime),
    Layer.provideMerge(DurableTurn.layerLog),
    Layer.provideMerge(engine)
  ) as Layer.Layer<never, unknown, unknown>
}
