/**
 * Measured start and end times of tool bodies, and an ASCII chart of them.
 */
import { Effect } from "effect"

export interface Span {
  readonly callId: string
  readonly label: string
  /** Milliseconds since the timeline's origin. */
  readonly start: number
  readonly end: number
}

export interface Timeline {
  /** Sets the origin (time 0) to now and forgets earlier spans. */
  readonly reset: () => void
  /** Runs `effect` and records when it started and ended (however it ended). */
  readonly measure: <A, E, R>(callId: string, label: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly spans: () => ReadonlyArray<Span>
  /** Resolves when a body whose label starts with `prefix` starts. */
  readonly whenStarted: (prefix: string) => Promise<void>
}

export const makeTimeline = (): Timeline => {
  let origin = performance.now()
  let spans: Array<Span> = []
  const watchers: Array<{ readonly prefix: string; readonly resolve: () => void }> = []
  return {
    reset: () => {
      origin = performance.now()
      spans = []
    },
    measure: (callId, label, effect) =>
      Effect.suspend(() => {
        const start = performance.now() - origin
        for (const watcher of watchers.filter((w) => label.startsWith(w.prefix))) {
          watchers.splice(watchers.indexOf(watcher), 1)
          watcher.resolve()
        }
        return Effect.ensuring(
          effect,
          Effect.sync(() => {
            spans.push({ callId, label, start, end: performance.now() - origin })
          })
        )
      }),
    spans: () => [...spans].sort((a, b) => a.start - b.start),
    whenStarted: (prefix) => new Promise<void>((resolve) => watchers.push({ prefix, resolve }))
  }
}

/** Whether two spans ran at the same time for a moment. */
export const overlaps = (a: Span, b: Span): boolean => a.start < b.end && b.start < a.end

/** One line per span: `label |   ####      | 0 → 41 ms`. */
export const chart = (spans: ReadonlyArray<Span>, width = 40): ReadonlyArray<string> => {
  const total = Math.max(1, ...spans.map((span) => span.end))
  const column = (ms: number) => Math.min(width - 1, Math.floor((ms / total) * width))
  const labelWidth = Math.max(...spans.map((span) => span.label.length))
  return spans.map((span) => {
    const from = column(span.start)
    const to = Math.max(from, column(span.end) - 1)
    const bar = " ".repeat(from) + "#".repeat(to - from + 1) + " ".repeat(width - to - 1)
    const times = `${Math.round(span.start).toString().padStart(4)} → ${Math.round(span.end).toString().padStart(4)} ms`
    return `${span.label.padEnd(labelWidth)} |${bar}| ${times}`
  })
}
