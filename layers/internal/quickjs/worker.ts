/**
 * The entry module of a QuickJS worker thread: it loads the engine (and amaro), then runs one
 * program at a time for the main thread. Binding calls go to the main thread as messages and
 * come back as settlements; stops arrive through the run's shared flag (polled while the guest
 * computes) and as messages (while it waits).
 *
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import type { CodeRunResult } from "../../../src/CodeRuntime.js"
import type { Config } from "./config.js"
import type { Engine } from "./engine.js"
import { loadEngine } from "./engine.js"
import type { FromWorker, ToWorker, WorkerInit } from "./protocol.js"
import { stopOf } from "./protocol.js"
import { loadStripper, prepare } from "./source.js"
import { Session } from "./session.js"

/** Imported outside a worker thread (a bundler or a module walk), this module does nothing. */
const port = parentPort
const config: Config = port === null ? (undefined as unknown as Config) : (workerData as WorkerInit).config
const post = (message: FromWorker) => port!.postMessage(message)

let current: { readonly run: number; readonly flag: Int32Array; session?: Session } | undefined

const start = async (
  engine: Engine,
  stripper: Awaited<ReturnType<typeof loadStripper>> | undefined,
  message: Extract<ToWorker, { type: "run" }>
): Promise<CodeRunResult> => {
  const prepared = prepare(message.program, config.limits, stripper)
  if (prepared._tag === "Refused") return { logs: [], error: { kind: prepared.kind, message: prepared.message } }
  const flag = current!.flag
  const instance = await engine.instantiate(config.limits.memoryBytes)
  const session = new Session(instance, {
    code: prepared.code,
    filename: prepared.filename,
    lines: prepared.lines,
    namespaces: message.namespaces,
    limits: config.limits
  }, {
    dispatch: (call, namespace, index, args) =>
      post({ type: "call", run: message.run, call, namespace, index, args }),
    pollStop: () => stopOf(Atomics.load(flag, 0), config.limits)
  })
  current!.session = session
  const early = stopOf(Atomics.load(flag, 0), config.limits)
  if (early !== undefined) session.stop(early)
  return session.result
}

const serve = (engine: Engine, stripper: Awaited<ReturnType<typeof loadStripper>> | undefined) =>
(message: ToWorker) => {
  switch (message.type) {
    case "run": {
      current = { run: message.run, flag: new Int32Array(message.flag) }
      start(engine, stripper, message).then(
        (result) => result,
        (error: unknown): CodeRunResult => ({
          logs: [],
          error: {
            kind: "worker-exit",
            message: `the engine instance could not run: ${error instanceof Error ? error.message : "unknown failure"}`
          }
        })
      ).then((result) => {
        current = undefined
        post({ type: "done", run: message.run, result })
      })
      return
    }
    case "settle":
      if (current?.run === message.run) current.session?.settle(message.call, message.outcome)
      return
    case "stop": {
      if (current?.run !== message.run) return
      const stop = stopOf(Atomics.load(current.flag, 0), config.limits)
      if (stop !== undefined) current.session?.stop(stop)
      return
    }
  }
}

if (port !== null) {
  Promise.all([loadEngine(), config.typescript ? loadStripper() : Promise.resolve(undefined)]).then(
    ([engine, stripper]) => {
      port.on("message", serve(engine, stripper))
      post({ type: "ready" })
    },
    (error: unknown) =>
      post({ type: "fatal", message: error instanceof Error ? error.message : "the engine could not be loaded" })
  )
}
