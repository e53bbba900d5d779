/**
 * The probe of the Python runtime, run once when the layer is built: the real interpreter, the
 * host files it needs, and which isolation levels work here. The sandbox level (`bwrap`) is
 * available only when a self-check program, run through the very launch path runs will use,
 * proves every property of the D-23 bar from inside.
 *
 * @internal
 */
import { execFile } from "node:child_process"
import { accessSync, constants, realpathSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, isAbsolute, join } from "node:path"
import * as Effect from "effect/Effect"
import { CodeRuntimeError, defaultLimits } from "../../../src/CodeRuntime.js"
import type { Environment, IsolationLevel } from "../../CodeRuntimePython.js"
import type { Check } from "./boundary.js"
import { evaluate, SELF_CHECK_PROGRAM } from "./boundary.js"
import type { ReadProbeOptions } from "./options.js"
import { runProgram } from "./run.js"
import { RUNNER_SOURCE } from "./runner.js"
import type { Launch, Needs, View } from "./sandbox.js"
import {
  bwrapArguments,
  DISCOVERY_SOURCE,
  dropArguments,
  hostIsRoot,
  planView,
  PYTHON_FLAGS,
  SANDBOX_ID,
  UNSHARE_ARGUMENTS
} from "./sandbox.js"

/** @internal */
export const isolationNotes: { readonly [L in IsolationLevel]: string } = Object.freeze({
  bwrap: "The sandbox (the default, and the only level fit for model-written code). A bubblewrap " +
    "sandbox whose root is an empty read-only directory holding only the interpreter's own files, " +
    "read-only: its executable, its stdlib (site-packages masked), the shared libraries those load " +
    "and the dynamic loader. The run's fresh temporary directory is the only writable place. New " +
    "pid, network, ipc, uts and cgroup namespaces: only the run's own processes, no network " +
    "interface but loopback. The program runs as uid/gid 65534 (as root the runner drops to it " +
    "itself, without a user namespace, so the kernel sees an unprivileged user), with no " +
    "capabilities, no-new-privileges, an empty environment, a new session, killed with the host, " +
    "and RLIMIT_NPROC 0: it cannot start processes or threads. Proven when the layer is built by " +
    "a self-check run inside it. Not provided: a seccomp filter (the kernel's whole syscall " +
    "surface is reachable) and a cgroup (memory and CPU are bounded by resource limits).",
  "unshare-trusted-code-only": "UNFIT FOR UNTRUSTED CODE. A separate process in new user, network " +
    "and pid namespaces (`unshare -rn --pid --fork --kill-child`): no network, only its own " +
    "processes, all killed with the run. The program reads, and may delete or rename, whatever " +
    "the host user may, and runs as root inside its user namespace.",
  "process-trusted-code-only": "UNFIT FOR UNTRUSTED CODE. A separate OS process per run with an " +
    "empty environment, a fresh temporary directory and resource limits, nothing more: the " +
    "program reads and writes the filesystem with the host user's permissions, opens network " +
    "connections, signals the host user's processes and (as root) starts processes."
})

const PROBE_TIMEOUT_MS = 30_000

interface Captured {
  readonly failed: boolean
  readonly stdout: string
  readonly stderr: string
}

const capture = (file: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.promise((signal) =>
    new Promise<Captured>((resolve) => {
      try {
        execFile(
          file,
          args,
          { env, signal, timeout: PROBE_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, encoding: "utf8" },
          (error, stdout, stderr) => resolve({ failed: error !== null, stdout, stderr })
        )
      } catch {
        resolve({ failed: true, stdout: "", stderr: "" })
      }
    })
  )

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** @internal */
export const findCommand = (command: string): string | undefined => {
  if (command.includes("/")) return isExecutable(command) ? command : undefined
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir.length === 0) continue
    const candidate = join(dir, command)
    if (isExecutable(candidate)) return candidate
  }
  return undefined
}

const lastLine = (text: string): string => {
  const line = text.trim().split("\n").pop() ?? ""
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}

const INFO = [
  "import json, sys",
  "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'supported': sys.version_info >= (3, 8)}))"
].join("\n")

const fail = (message: string) => Effect.fail(new CodeRuntimeError({ message }))

const strings = (value: unknown): ReadonlyArray<string> | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === "string") ? value as ReadonlyArray<string> : undefined

const readNeeds = (stdout: string): Needs | undefined => {
  let parsed: Record<string, unknown>
  try {
    parsed = JSON.parse(stdout.trim().split("\n").pop() ?? "") as Record<string, unknown>
  } catch {
    return undefined
  }
  const dirs = strings(parsed.dirs)
  const files = strings(parsed.files)
  const links = Array.isArray(parsed.links) ? parsed.links : undefined
  if (dirs === undefined || files === undefined || links === undefined) return undefined
  const pairs = links.filter((pair): pair is [string, string] => strings(pair)?.length === 2)
  return {
    dirs,
    files,
    loader: typeof parsed.loader === "string" ? parsed.loader : undefined,
    links: pairs
  }
}

const probeUnshare = (command: string, executable: string) =>
  Effect.gen(function*() {
    const found = findCommand(command)
    if (found === undefined) return { problem: `${command} was not found` }
    const out = yield* capture(
      found,
      [...UNSHARE_ARGUMENTS, executable, "-I", "-S", "-c", "import os; print(os.getpid())"],
      {}
    )
    if (out.failed || out.stdout.trim() !== "1") {
      return { problem: `${found} ${UNSHARE_ARGUMENTS.join(" ")} could not start Python: ${lastLine(out.stderr)}` }
    }
    return { path: found }
  })

/** The launch of a level (the sandbox needs its view). @internal */
export const launcher = (environment: Environment, level: IsolationLevel): Launch => {
  const python = [environment.executable, ...PYTHON_FLAGS, "-c", RUNNER_SOURCE]
  switch (level) {
    case "process-trusted-code-only":
      return { argv: () => python, wrapped: false }
    case "unshare-trusted-code-only": {
      const unshare = environment.unshare ?? "unshare"
      return { argv: () => [unshare, ...UNSHARE_ARGUMENTS, ...python, "init"], wrapped: true }
    }
    case "bwrap": {
      const bwrap = environment.bwrap ?? "bwrap"
      const sandbox = environment.sandbox
      const view: View = sandbox?.view ?? { symlinks: [], dirs: [], files: [], masked: [], top: [] }
      const asRoot = sandbox?.dropsPrivileges ?? hostIsRoot()
      return {
        argv: (workdir) => [bwrap, ...bwrapArguments(view, workdir, asRoot), "--", ...python, ...dropArguments(asRoot, workdir)],
        wrapped: true,
        workdirOwner: asRoot ? SANDBOX_ID : undefined
      }
    }
  }
}

/** The names the sandbox's root must hold, and nothing else. @internal */
export const expectedRoot = (view: View): ReadonlyArray<string> => {
  const names = new Set([...view.top, "dev", "proc"])
  const tmpTop = realpathSync(tmpdir()).split("/")[1]
  if (tmpTop !== undefined && tmpTop.length > 0) names.add(tmpTop)
  return Array.from(names).sort()
}

const SELF_CHECK_LIMITS = { ...defaultLimits, cpuMs: 10_000, wallMs: PROBE_TIMEOUT_MS }

/** Runs the self-check through `launch` and says which properties held. @internal */
export const selfCheck = (launch: Launch, view: View) =>
  Effect.map(
    runProgram({
      program: SELF_CHECK_PROGRAM,
      namespaces: [],
      signal: undefined,
      launch,
      limits: SELF_CHECK_LIMITS,
      python: { openFiles: 32, fileBytes: 0, messageBytes: 1024 * 1024 },
      registry: { closed: false, live: new Set() }
    }),
    (result): { readonly checks: ReadonlyArray<Check> } | { readonly problem: string } =>
      result.error !== undefined
        ? { problem: `the sandbox could not run Python (${result.error.kind}: ${result.error.message})` }
        : { checks: evaluate(result.value, expectedRoot(view)) }
  )

const probeBwrap = (command: string, base: Environment) =>
  Effect.gen(function*() {
    const found = findCommand(command)
    if (found === undefined) return { problem: `bubblewrap (${command}) was not found` }
    const environment: Environment = { ...base, bwrap: found }
    const checked = yield* selfCheck(launcher(environment, "bwrap"), base.sandbox!.view)
    if ("problem" in checked) return { problem: `${found}: ${checked.problem}`, checks: [] }
    const failed = checked.checks.filter((check) => !check.held)
    if (failed.length > 0) {
      return {
        problem: `the sandbox did not hold: ${failed.map((check) => `${check.name} (${check.detail})`).join("; ")}`,
        checks: checked.checks
      }
    }
    return { path: found, checks: checked.checks }
  })

const probed = new WeakSet<object>()

/** Whether `value` is a result of `probe` (the only environments the layer accepts). @internal */
export const isProbed = (value: unknown): value is Environment =>
  typeof value === "object" && value !== null && probed.has(value)

/** @internal */
export const probe = (options: ReadProbeOptions): Effect.Effect<Environment, CodeRuntimeError> =>
  Effect.gen(function*() {
    const named = options.executable
    const launcherPath = findCommand(named)
    if (launcherPath === undefined) {
      return yield* fail(
        `${JSON.stringify(named)} was not found${named.includes("/") ? "" : " on PATH"}: install Python 3.8 or ` +
          "newer, or pass `executable` to CodeRuntimePython"
      )
    }
    const resolved = yield* capture(launcherPath, ["-c", "import sys; print(sys.executable)"], process.env)
    if (resolved.failed) return yield* fail(`${launcherPath} did not run: ${lastLine(resolved.stderr)}`)
    const reported = resolved.stdout.trim()
    let executable: string
    try {
      executable = realpathSync(isAbsolute(reported) && isExecutable(reported) ? reported : launcherPath)
    } catch {
      return yield* fail(`${launcherPath} could not be resolved`)
    }
    const checked = yield* capture(executable, ["-I", "-S", "-c", INFO], {})
    let info: { version: unknown; supported: unknown }
    try {
      info = JSON.parse(checked.stdout)
    } catch {
      return yield* fail(`${executable} -I -S did not run: ${lastLine(checked.stderr)}`)
    }
    if (checked.failed || typeof info.version !== "string") {
      return yield* fail(`${executable} -I -S did not run: ${lastLine(checked.stderr)}`)
    }
    if (info.supported !== true) {
      return yield* fail(`${executable} is Python ${info.version}; the Python runtime needs 3.8 or newer`)
    }
    const discovered = yield* capture(executable, ["-I", "-S", "-W", "ignore", "-c", DISCOVERY_SOURCE], {})
    const needs = discovered.failed ? undefined : readNeeds(discovered.stdout)
    if (needs === undefined) {
      return yield* fail(`${executable} could not list the files it needs: ${lastLine(discovered.stderr)}`)
    }
    const view = planView(needs)
    const base: Environment = {
      executable,
      version: info.version,
      interpreterPaths: view.dirs,
      levels: [],
      unavailable: {},
      sandbox: { view, dropsPrivileges: hostIsRoot(), checks: [] }
    }
    const [unshare, bwrap] = yield* Effect.all([
      probeUnshare(options.unshare, executable),
      probeBwrap(options.bwrap, base)
    ], { concurrency: 2 })
    const levels: Array<IsolationLevel> = ["process-trusted-code-only"]
    const unavailable: { -readonly [L in IsolationLevel]?: string } = {}
    if ("path" in unshare) levels.push("unshare-trusted-code-only")
    else unavailable["unshare-trusted-code-only"] = unshare.problem
    if ("path" in bwrap) levels.push("bwrap")
    else unavailable.bwrap = bwrap.problem
    const environment: Environment = Object.freeze({
      ...base,
      levels: Object.freeze(levels),
      unshare: "path" in unshare ? unshare.path : undefined,
      bwrap: "path" in bwrap ? bwrap.path : undefined,
      unavailable: Object.freeze(unavailable),
      sandbox: Object.freeze({
        view,
        dropsPrivileges: hostIsRoot(),
        checks: Object.freeze("checks" in bwrap ? bwrap.checks : [])
      })
    })
    probed.add(environment)
    return environment
  })

/** What is missing for `level` and how to get it. @internal */
export const remedyFor = (environment: Environment, level: IsolationLevel): { missing: string; remedy: string } => {
  const why = environment.unavailable[level] ?? "it did not work here"
  if (level !== "bwrap") {
    return { missing: `isolation "${level}" is not available: ${why}`, remedy: "choose another isolation level" }
  }
  if (why.startsWith("bubblewrap (")) {
    return {
      missing: why,
      remedy: "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), " +
        "or run Python in WebAssembly with CodeRuntimePyodide.layer()"
    }
  }
  return {
    missing: why,
    remedy: "bubblewrap needs user namespaces (or root); where they are not allowed, such as Docker's default " +
      "seccomp profile or macOS, run Python in WebAssembly with CodeRuntimePyodide.layer()"
  }
}
