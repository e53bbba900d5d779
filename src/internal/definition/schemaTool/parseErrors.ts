/**
 * The text of a parse error: Effect's issues as the violation lines of a tool error (one per path
 * and problem; the `undefined` branch of an optional field is dropped where the path has another
 * issue), and the message of a thrown value.
 *
 * @internal
 */
import * as ParseResult from "effect/ParseResult"

/** @internal */
export const messageOf = (e: unknown): string => {
  try {
    const raw = e instanceof Error ? e.message : String(e)
    return raw.replace(/\s+/g, " ").trim()
  } catch {
    return "<unprintable error>"
  }
}

const renderPath = (root: string, path: ReadonlyArray<PropertyKey>): string => {
  let out = root
  for (const key of path) {
    if (typeof key === "number") {
      out = `${out}[${key}]`
    } else {
      const name = typeof key === "symbol" ? String(key) : key
      out = out === "" ? name : `${out}.${name}`
    }
  }
  return out === "" ? "arguments" : out
}

/** @internal */
export const SYNC_ONLY = "(only synchronous schemas are supported)"
const UNDEFINED_BRANCH = "Expected undefined, actual "

interface Formatted {
  readonly violations: ReadonlyArray<string>
  readonly forbidden: ReadonlyArray<string>
}

/** @internal */
export const formatError = (error: ParseResult.ParseError, root: string): Formatted => {
  const violations: Array<string> = []
  const forbidden: Array<string> = []
  const seen = new Set<string>()
  const push = (line: string) => {
    if (!seen.has(line)) {
      seen.add(line)
      violations.push(line)
    }
  }
  let issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>
  try {
    issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  } catch (e) {
    return { violations: [`"${renderPath(root, [])}": ${messageOf(e)}`], forbidden }
  }
  const paths = issues.map((issue) => renderPath(root, issue.path))
  const perPath = new Map<string, number>()
  for (const path of paths) perPath.set(path, (perPath.get(path) ?? 0) + 1)
  for (let i = 0; i < issues.length; i++) {
    const issue = issues[i]!
    const path = paths[i]!
    if (issue._tag === "Type" && issue.message.startsWith(UNDEFINED_BRANCH) && perPath.get(path)! > 1) continue
    const last = issue.path.length === 0 ? undefined : issue.path[issue.path.length - 1]
    switch (issue._tag) {
      case "Missing":
        push(`missing required property "${path}"`)
        break
      case "Unexpected":
        push(
          typeof last === "string"
            ? `"${path}" is not a declared property (additionalProperties: false)`
            : `"${path}": ${issue.message}`
        )
        break
      case "Forbidden":
        forbidden.push(path)
        push(`"${path}": the schema needs an asynchronous transformation ${SYNC_ONLY}`)
        break
      default:
        push(`"${path}": ${issue.message}`)
    }
  }
  if (violations.length === 0) push(`"${renderPath(root, [])}": ${messageOf(error)}`)
  return { violations, forbidden }
}
