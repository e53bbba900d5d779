/**
 * The in-memory registry service: its state (with Code Mode's transport outside every layer),
 * the views cached until the next change, the model-facing schemas, execution modes, the change
 * stream, and the registration members of `registrations.ts`.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import * as CodeRuntime from "../../../src/CodeRuntime.js"
import type { AgentId } from "../../../src/Execution.js"
import type { ExecutionMode } from "../../../src/Policy.js"
import type { RegisteredTool, RegistryChange, RegistryView, Service, ToolSchema } from "../../../src/ToolRegistry.js"
import * as codeMode from "../../../src/internal/codeMode/modes.js"
import type { MakeOptions } from "../../InMemoryToolRegistry.js"
import * as checks from "./checks.js"
import { classify, projectSchema, projectTransport } from "./projection.js"
import { registrations } from "./registrations.js"
import * as state_ from "./state.js"
import type { State } from "./state.js"

const CHANGE_BUFFER = 1024

const parallel: Effect.Effect<ExecutionMode> = Effect.succeed("parallel")
const exclusive: Effect.Effect<ExecutionMode> = Effect.succeed("exclusive")

/** @internal */
export const make = (options?: MakeOptions): Effect.Effect<Service> =>
  Effect.map(PubSub.sliding<RegistryChange>(CHANGE_BUFFER), (pubsub) => {
    const transportDefinition = options?.transport
    let transport: RegisteredTool | undefined
    const state: State = state_.makeState(options?.mode ?? "native", () => {
      if (transportDefinition === undefined) return undefined
      if (transport === undefined) {
        transport = {
          definition: transportDefinition,
          context: Context.empty(),
          validateOutput: checks.lazyValidatorFor(transportDefinition)
        }
      }
      return transport
    })

    const publish = (change: RegistryChange): Effect.Effect<void> => Effect.asVoid(PubSub.publish(pubsub, change))

    const unsafeView = (agent?: AgentId): RegistryView => state_.viewData(state, agent).view

    const {
      declareAgent,
      register,
      restrict,
      guard,
      presentAs,
      onPreExecute,
      onExecute,
      onPostExecute,
      onResult
    } = registrations(state, publish)

    const service: Service = {
      declareAgent,
      register,
      restrict,
      guard,
      presentAs,
      onPreExecute,
      onExecute,
      onPostExecute,
      onResult,
      view: (agent) => Effect.sync(() => unsafeView(agent)),
      unsafeView,
      get: (name, agent) =>
        Effect.sync(() => Option.fromNullable(state_.viewData(state, agent).view.get(name)?.definition)),
      schemas: (agent) =>
        Effect.suspend(() => {
          const { names, view } = state_.viewData(state, agent)
          const project = (runtime: Option.Option<CodeRuntime.Service>): Array<ToolSchema> => {
            const out: Array<ToolSchema> = new Array(names.length)
            for (let i = 0; i < names.length; i++) {
              const definition = view.tools[i].definition
              out[i] = codeMode.isTransport(definition)
                ? projectTransport(Option.getOrUndefined(runtime))
                : projectSchema(names[i], definition)
            }
            return out
          }
          const last = view.tools[view.tools.length - 1]
          return last !== undefined && codeMode.isTransport(last.definition)
            ? Effect.map(Effect.serviceOption(CodeRuntime.CodeRuntime), project)
            : Effect.sync(() => project(Option.none()))
        }),
      executionMode: (input) =>
        Effect.suspend(() => classify(unsafeView, input) === "parallel" ? parallel : exclusive),
      changes: Stream.fromPubSub(pubsub)
    }
    return service
  })
