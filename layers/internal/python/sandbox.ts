/**
 * The bubblewrap sandbox of the Python runtime: which host files the interpreter needs (found
 * once by running it with every extension module of its own stdlib loaded and reading the files
 * it mapped), and the `bwrap` command line that exposes exactly those, read-only, on an empty
 * read-only root, with the run's directory the only writable place.
 *
 * As root the sandbox runs without a user namespace and the runner drops to uid/gid 65534
 * (so the kernel sees an unprivileged user and `RLIMIT_NPROC` applies); as any other user it
 * runs in a user namespace as uid 65534, which the kernel maps to that (unprivileged) user.
 *
 * @internal
 */
import { chownSync, lstatSync, mkdtempSync, readlinkSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve, sep } from "node:path"

/** The unprivileged uid and gid a sandboxed program runs as. @internal */
export const SANDBOX_ID = 65534

/** @internal */
export const PYTHON_FLAGS = ["-I", "-S", "-B", "-X", "utf8", "-u"]

/** @internal */
export const UNSHARE_ARGUMENTS = ["-rn", "--pid", "--fork", "--kill-child"]

/** How to start one run's process. @internal */
export interface Launch {
  /** The command line for a run in `workdir`. */
  readonly argv: (workdir: string) => ReadonlyArray<string>
  /** The direct child reports a program killed by signal n as exit code 128 + n. */
  readonly wrapped: boolean
  /** The owner the run's directory is given before the run starts (the dropped uid). */
  readonly workdirOwner?: number | undefined
}

/** What the interpreter needs from the host, as the discovery run reported it. @internal */
export interface Needs {
  /** Directories on `sys.path` (the stdlib and its extension modules). */
  readonly dirs: ReadonlyArray<string>
  /** Files the interpreter mapped: itself, its shared libraries and their data files. */
  readonly files: ReadonlyArray<string>
  /** The ELF interpreter the executable names (the dynamic loader). */
  readonly loader: string | undefined
  /** Symlinks beside a needed library that resolve to it (the names the loader asks for). */
  readonly links: ReadonlyArray<readonly [string, string]>
}

/**
 * Run as `python -I -S -W ignore -c DISCOVERY_SOURCE` with an empty environment: loads every
 * extension module of the stdlib (their shared libraries are the interpreter's own needs) and
 * prints one JSON line of what the process mapped.
 *
 * @internal
 */
export const DISCOVERY_SOURCE = String.raw`import json, os, sys, importlib.machinery
dirs = []
for p in sys.path:
    if p and os.path.isdir(p):
        real = os.path.realpath(p)
        if real not in dirs:
            dirs.append(real)
skip = ("_test", "_ctypes_test", "_tkinter", "xx", "_xx")
for d in dirs:
    for name in sorted(os.listdir(d)):
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            if name.endswith(suffix):
                mod = name[:-len(suffix)]
                if not mod.startswith(skip):
                    try:
                        __import__(mod)
                    except BaseException:
                        pass
                break
files = set()
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and not parts[5].rstrip().endswith("(deleted)"):
            files.add(parts[5].rstrip("\n"))
loader = None
try:
    with open(os.path.realpath(sys.executable), "rb") as f:
        head = f.read(64)
        if head[:4] == b"\x7fELF" and head[4] == 2:
            phoff = int.from_bytes(head[32:40], "little")
            size = int.from_bytes(head[54:56], "little")
            count = int.from_bytes(head[56:58], "little")
            f.seek(phoff)
            table = f.read(size * count)
            for i in range(count):
                entry = table[i * size:(i + 1) * size]
                if int.from_bytes(entry[0:4], "little") == 3:
                    f.seek(int.from_bytes(entry[8:16], "little"))
                    loader = f.read(int.from_bytes(entry[32:40], "little")).split(b"\0")[0].decode()
except OSError:
    pass
links = []
listed = {}
for path in sorted(files):
    d = os.path.dirname(path)
    if any(path.startswith(x + "/") for x in dirs):
        continue
    if d not in listed:
        try:
            listed[d] = [(n, os.path.join(d, n)) for n in os.listdir(d)]
        except OSError:
            listed[d] = []
    for name, full in listed[d]:
        if os.path.islink(full) and os.path.realpath(full) == path:
            links.append([full, os.readlink(full)])
print(json.dumps({"dirs": dirs, "files": sorted(files), "loader": loader, "links": links}))
`

const isUnder = (path: string, dir: string): boolean => path === dir || path.startsWith(dir + sep)

const MAX_LINKS = 40

/** The top-level symlinks of a merged-/usr system (`/lib -> usr/lib`), as the loader's paths need them. */
const TOP_LEVEL_LINKS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]

const lstat = (path: string) => {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

/** The operations of the sandbox's file view: symlinks to recreate and real paths to bind. @internal */
export interface View {
  readonly symlinks: ReadonlyArray<readonly [string, string]>
  readonly dirs: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
  /** Directories inside `dirs` that are masked with an empty read-only directory (site-packages). */
  readonly masked: ReadonlyArray<string>
  /** The names the sandbox's root holds, besides dev, proc and the run's directory. */
  readonly top: ReadonlyArray<string>
}

/**
 * Resolves what the interpreter needs into a file view: each path walked component by component
 * so every symlink on the way is recreated and only real paths are bound.
 *
 * @internal
 */
export const planView = (needs: Needs): View => {
  const symlinks = new Map<string, string>()
  const binds = new Set<string>()
  const walk = (target: string, depth: number): string | undefined => {
    if (depth > MAX_LINKS) return undefined
    const parts = target.split("/").filter((part) => part.length > 0)
    let current = ""
    for (let i = 0; i < parts.length; i++) {
      current += `/${parts[i]}`
      const stat = lstat(current)
      if (stat === undefined) return undefined
      if (stat.isSymbolicLink()) {
        let link: string
        try {
          link = readlinkSync(current)
        } catch {
          return undefined
        }
        symlinks.set(current, link)
        const rest = parts.slice(i + 1).join("/")
        const next = resolve(dirname(current), link)
        return walk(rest.length === 0 ? next : `${next}/${rest}`, depth + 1)
      }
    }
    return current
  }
  const dirs: Array<string> = []
  for (const dir of needs.dirs) {
    const real = walk(dir, 0)
    if (real !== undefined && !dirs.some((known) => isUnder(real, known))) dirs.push(real)
  }
  const inDirs = (path: string) => dirs.some((dir) => isUnder(path, dir))
  for (const file of [...needs.files, ...(needs.loader === undefined ? [] : [needs.loader])]) {
    const real = walk(file, 0)
    if (real !== undefined && !inDirs(real)) binds.add(real)
  }
  for (const [link, target] of needs.links) {
    if (!inDirs(link) && lstat(link)?.isSymbolicLink() === true) symlinks.set(link, target)
  }
  for (const link of TOP_LEVEL_LINKS) {
    if (lstat(link)?.isSymbolicLink() === true) {
      try {
        symlinks.set(link, readlinkSync(link))
      } catch {
        // an unreadable link is simply not recreated
      }
    }
  }
  const masked: Array<string> = []
  for (const dir of dirs) {
    for (const name of ["site-packages", "dist-packages"]) {
      if (lstat(join(dir, name))?.isDirectory() === true) masked.push(join(dir, name))
    }
  }
  const top = new Set<string>()
  for (const path of [...symlinks.keys(), ...dirs, ...binds]) top.add(path.split("/")[1]!)
  return {
    symlinks: Array.from(symlinks),
    dirs,
    files: Array.from(binds).sort(),
    masked,
    top: Array.from(top).sort()
  }
}

/** Whether this process runs as root (the sandbox then drops to `SANDBOX_ID` itself). @internal */
export const hostIsRoot = (): boolean => typeof process.getuid === "function" && process.getuid() === 0

/**
 * The `bwrap` arguments for a run in `workdir` (the command follows them).
 *
 * @internal
 */
export const bwrapArguments = (view: View, workdir: string, asRoot: boolean): Array<string> => {
  const args = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
  if (asRoot) args.push("--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID")
  else args.push("--unshare-user", "--uid", String(SANDBOX_ID), "--gid", String(SANDBOX_ID), "--cap-drop", "ALL")
  args.push("--die-with-parent", "--new-session", "--clearenv")
  const ancestors = new Set<string>()
  for (const path of [...view.dirs, ...view.files, ...view.symlinks.map(([link]) => link), workdir]) {
    for (let at = path.indexOf("/", 1); at !== -1; at = path.indexOf("/", at + 1)) {
      const ancestor = path.slice(0, at)
      if (!view.dirs.some((dir) => isUnder(ancestor, dir))) ancestors.add(ancestor)
    }
  }
  for (const dir of Array.from(ancestors).sort()) args.push("--perms", "0755", "--dir", dir)
  for (const dir of view.dirs) args.push("--ro-bind", dir, dir)
  for (const file of view.files) args.push("--ro-bind", file, file)
  for (const [link, target] of view.symlinks) args.push("--symlink", target, link)
  for (const dir of view.masked) args.push("--tmpfs", dir, "--remount-ro", dir)
  args.push("--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc")
  args.push("--bind", workdir, workdir)
  if (!asRoot) args.push("--chdir", workdir)
  args.push("--remount-ro", "/")
  return args
}

/**
 * The runner's arguments after `-c RUNNER`: as root, drop to the sandbox user, then enter the run
 * directory (owned by that user, mode 0700, so root without capabilities cannot enter it first).
 *
 * @internal
 */
export const dropArguments = (asRoot: boolean, workdir: string): Array<string> =>
  asRoot ? ["drop", String(SANDBOX_ID), String(SANDBOX_ID), workdir] : []

/** A fresh run directory (its real path), owned by `owner` when given. @internal */
export const makeWorkdir = (owner?: number): string => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "etr-python-")))
  if (owner !== undefined) chownSync(dir, owner, owner)
  return dir
}

/** @internal */
export const removeWorkdir = (dir: string): void => {
  try {
    rmSync(dir, { recursive: true, force: true })
  } catch {
    // the directory is temporary; a leftover is harmless
  }
}
