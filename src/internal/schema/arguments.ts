/**
 * Parsing of the raw argument text a model sends with a tool call (SCHED-1), shared by the
 * scheduler and the presentation projection.
 *
 * @internal
 */

/**
 * SCHED-1: `""` → `{}`; valid JSON text → its value; text that is not valid JSON → the text itself.
 * Never throws.
 *
 * @internal
 */
export const parseArguments = (raw: string): unknown => {
  if (raw === "") return {}
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}
