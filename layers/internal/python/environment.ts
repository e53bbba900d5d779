/** @internal */
import { execFile } from "node:child_process"
import { accessSync, constants, existsSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, isAbsolute, join, sep } from "node:path"
import * as Effect from "effect/Effect"
import { CodeRuntimeError } from "../../../src/CodeRuntime.js"
import type { Environment, IsolationLevel } from "../../CodeRuntimePython.js"
import type { ReadProbeOptions } from "./options.js"
import { RUNNER_SOURCE } from "./runner.js"

/** @internal */
export const isolationNotes: { readonly [L in IsolationLevel]: string } = Object.freeze({
  process: "A separate OS process per run, started as `python3 -I -S` (no site-packages, no user " +
    "site, no PYTHON* variables) with an empty environment and a fresh temporary working directory " +
    "that is removed afterwards. Limits: address space (memory), CPU time, open files, file size " +
    "(no file content by default), no core dumps, and a wall-time kill timer; the process group is " +
    "killed when the run ends. Not isolated: the filesystem (the program reads, and may delete or " +
    "rename, whatever the host user may), the network, and other processes of the host user; a " +
    "program that starts a new session can leave processes behind.",
  unshare: "Everything of `process`, inside new user, network and pid namespaces (`unshare -rn " +
    "--pid --fork --kill-child`): there is no network at all (not even the host's loopback), the " +
    "program sees only its own processes, and every process it starts is killed with the run. " +
    "Not isolated: the filesystem, with the host user's permissions, as in `process`.",
  bwrap: "Everything of `unshare`, inside a bubblewrap sandbox (all namespaces, a new session, all " +
    "capabilities dropped, killed with the host): the filesystem is a read-only view of the host's " +
    "root in which /tmp, /var/tmp, /home, /root, /run, /mnt, /media and /srv are empty (the " +
    "interpreter's own directories stay readable), /dev and /proc are private, and the run's " +
    "temporary directory is the only writable place. Still readable: system files such as /etc, " +
    "/usr and /opt. No seccomp filter or cgroup: memory and CPU are bounded by resource limits only."
})

/** @internal */
export const HIDDEN = ["/tmp", "/var/tmp", "/home", "/root", "/run", "/mnt", "/media", "/srv"]

/** @internal */
export const PYTHON_FLAGS = ["-I", "-S", "-B", "-X", "utf8", "-u"]

const PROBE_TIMEOUT_MS = 15_000

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
          { env, signal, timeout: PROBE_TIMEOUT_MS, killSignal: "SIGKILL", maxBuffer: 1024 * 1024, encoding: "utf8" },
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

const firstLine = (text: string): string => {
  const line = text.trim().split("\n").pop() ?? ""
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}

const INFO = [
  "import json, os, sys",
  "exe = os.path.realpath(sys.executable) if sys.executable else ''",
  "paths = {os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix) if p}",
  "paths.add(os.path.dirname(exe)) if exe else None",
  "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'supported': sys.version_info >= (3, 8), " +
  "'paths': sorted(paths)}))"
].join("\n")

const isUnder = (path: string, dir: string): boolean => path === dir || path.startsWith(dir + sep)

/** @internal */
export const bwrapArguments = (workdir: string, interpreterPaths: ReadonlyArray<string>): Array<string> => {
  const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
  const hidden = HIDDEN.filter((dir) => existsSync(dir))
  for (const dir of hidden) args.push("--tmpfs", dir)
  for (const path of interpreterPaths) {
    if (hidden.some((dir) => isUnder(path, dir))) args.push("--ro-bind", path, path)
  }
  args.push(
    "--bind",
    workdir,
    workdir,
    "--chdir",
    workdir,
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--clearenv"
  )
  return args
}

/** @internal */
export const UNSHARE_ARGUMENTS = ["-rn", "--pid", "--fork", "--kill-child"]

const makeWorkdir = (): string => realpathSync(mkdtempSync(join(tmpdir(), "etr-python-")))

const removeWorkdir = (dir: string): void => {
  try {
    rmSync(dir, { recursive: true, force: true })
  } catch {
    // the directory is temporary; a leftover is harmless
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
      return { problem: `${found} ${UNSHARE_ARGUMENTS.join(" ")} could not start Python: ${firstLine(out.stderr)}` }
    }
    return { path: found }
  })

const probeBwrap = (command: string, executable: string, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const found = findCommand(command)
    if (found === undefined) return { problem: `${command} was not found` }
    const workdir = yield* Effect.acquireRelease(
      Effect.sync(makeWorkdir),
      (dir) => Effect.sync(() => removeWorkdir(dir))
    )
    const out = yield* capture(
      found,
      [...bwrapArguments(workdir, paths), executable, "-I", "-S", "-c", "import os; print(os.getcwd())"],
      {}
    )
    if (out.failed || out.stdout.trim() !== workdir) {
      return { problem: `${found} could not start Python: ${firstLine(out.stderr)}` }
    }
    return { path: found }
  }).pipe(Effect.scoped)

const fail = (message: string) => Effect.fail(new CodeRuntimeError({ message }))

/** @internal */
export const probe = (options: ReadProbeOptions): Effect.Effect<Environment, CodeRuntimeError> =>
  Effect.gen(function*() {
    const named = options.executable
    const launcher = findCommand(named)
    if (launcher === undefined) {
      return yield* fail(
        `${JSON.stringify(named)} was not found${named.includes("/") ? "" : " on PATH"}: install Python 3.8 or ` +
          "newer, or pass `executable` to CodeRuntimePython"
      )
    }
    const resolved = yield* capture(launcher, ["-c", "import sys; print(sys.executable)"], process.env)
    if (resolved.failed) {
      return yield* fail(`${launcher} did not run: ${firstLine(resolved.stderr)}`)
    }
    const reported = resolved.stdout.trim()
    let executable: string
    try {
      executable = realpathSync(isAbsolute(reported) && isExecutable(reported) ? reported : launcher)
    } catch {
      return yield* fail(`${launcher} could not be resolved`)
    }
    const checked = yield* capture(executable, ["-I", "-S", "-c", INFO], {})
    let info: { version: unknown; supported: unknown; paths: unknown }
    try {
      info = JSON.parse(checked.stdout)
    } catch {
      return yield* fail(`${executable} -I -S did not run: ${firstLine(checked.stderr)}`)
    }
    if (checked.failed || typeof info.version !== "string" || !Array.isArray(info.paths)) {
      return yield* fail(`${executable} -I -S did not run: ${firstLine(checked.stderr)}`)
    }
    if (info.supported !== true) {
      return yield* fail(`${executable} is Python ${info.version}; the Python runtime needs 3.8 or newer`)
    }
    const interpreterPaths = Object.freeze(
      (info.paths as ReadonlyArray<unknown>).filter((path): path is string => typeof path === "string")
    )
    const [unshare, bwrap] = yield* Effect.all([
      probeUnshare(options.unshare, executable),
      probeBwrap(options.bwrap, executable, interpreterPaths)
    ], { concurrency: 2 })
    const levels: Array<IsolationLevel> = ["process"]
    const unavailable: { -readonly [L in IsolationLevel]?: string } = {}
    if ("path" in unshare) levels.push("unshare")
    else unavailable.unshare = unshare.problem
    if ("path" in bwrap) levels.push("bwrap")
    else unavailable.bwrap = bwrap.problem
    const environment: Environment = {
      executable,
      version: info.version,
      interpreterPaths,
      levels: Object.freeze(levels),
      unshare: "path" in unshare ? unshare.path : undefined,
      bwrap: "path" in bwrap ? bwrap.path : undefined,
      unavailable: Object.freeze(unavailable)
    }
    return Object.freeze(environment)
  })

/** @internal */
export const chooseLevel = (
  environment: Environment,
  wanted: "best" | IsolationLevel
): { readonly level: IsolationLevel } | { readonly problem: string } => {
  const levels = environment.levels
  if (wanted === "best") return { level: levels[levels.length - 1] ?? "process" }
  if (levels.includes(wanted)) return { level: wanted }
  const why = environment.unavailable[wanted]
  return { problem: `isolation "${wanted}" is not available here${why === undefined ? "" : `: ${why}`}` }
}

/** How to start one run's process. @internal */
export interface Launch {
  /** The command line for a run in `workdir`. */
  readonly argv: (workdir: string) => ReadonlyArray<string>
  /** The direct child reports a program killed by signal n as exit code 128 + n. */
  readonly wrapped: boolean
}

/** @internal */
export const launcher = (environment: Environment, level: IsolationLevel): Launch => {
  const python = [environment.executable, ...PYTHON_FLAGS, "-c", RUNNER_SOURCE]
  switch (level) {
    case "process":
      return { argv: () => python, wrapped: false }
    case "unshare": {
      const unshare = environment.unshare ?? "unshare"
      return { argv: () => [unshare, ...UNSHARE_ARGUMENTS, ...python, "init"], wrapped: true }
    }
    case "bwrap": {
      const bwrap = environment.bwrap ?? "bwrap"
      return {
        argv: (workdir) => [bwrap, ...bwrapArguments(workdir, environment.interpreterPaths), ...python],
        wrapped: true
      }
    }
  }
}

/** @internal */
export { makeWorkdir, removeWorkdir }
