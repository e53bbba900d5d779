/**
 * The boundary self-check: a program run once, when the layer is built, through the very launch
 * path runs will use. It reports what it can see and do from inside; the host checks every
 * observation against the D-23 bar, and the sandbox level is available only when all of them
 * hold. A sandbox that cannot prove its boundary is not used (fail closed).
 *
 * @internal
 */

/** The self-check program (the body of the runner's async function). @internal */
export const SELF_CHECK_PROGRAM = String.raw`import os, socket
out = {}
out["uid"] = list(os.getresuid())
out["gid"] = list(os.getresgid())
out["groups"] = os.getgroups()
status = {}
with open("/proc/self/status") as f:
    for line in f:
        key, _, value = line.partition(":")
        status[key] = value.strip()
out["capEff"] = status.get("CapEff")
out["capPrm"] = status.get("CapPrm")
out["noNewPrivs"] = status.get("NoNewPrivs")
with open("/proc/self/uid_map") as f:
    out["uidMap"] = [line.split() for line in f if line.strip()]
try:
    with open("/proc/self/environ", "rb") as f:
        out["environ"] = len(f.read())
except OSError as e:
    out["environ"] = "errno %d" % e.errno
out["variables"] = len(os.environ)
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["root"] = sorted(os.listdir("/"))
for name, path in (("etc", "/etc"), ("home", "/home")):
    try:
        os.listdir(path)
        out[name] = "visible"
    except OSError as e:
        out[name] = e.errno
try:
    open("/etr-probe", "w").close()
    out["writeRoot"] = "wrote"
except OSError as e:
    out["writeRoot"] = e.errno
try:
    open(os.path.join(os.path.dirname(os.getcwd()), "etr-probe"), "w").close()
    out["writeParent"] = "wrote"
except OSError as e:
    out["writeParent"] = e.errno
try:
    open("scratch", "w").close()
    out["writeOwn"] = "ok"
except OSError as e:
    out["writeOwn"] = e.errno
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    out["fork"] = "forked"
except OSError as e:
    out["fork"] = e.errno
out["interfaces"] = sorted(name for _, name in socket.if_nameindex())
return out
`

/** One D-23 property and whether the self-check saw it hold. @internal */
export interface Check {
  readonly name: string
  readonly held: boolean
  readonly detail: string
}

const isList = (value: unknown): value is ReadonlyArray<unknown> => Array.isArray(value)

const mappedUid = (uid: number, map: unknown): number | undefined => {
  if (!isList(map)) return undefined
  for (const row of map) {
    if (!isList(row) || row.length !== 3) continue
    const [inside, outside, count] = row.map((cell) => Number(cell))
    if ([inside, outside, count].some((n) => !Number.isSafeInteger(n))) continue
    if (uid >= inside! && uid < inside! + count!) return outside! + (uid - inside!)
  }
  return undefined
}

const ENOENT = 2

/**
 * Checks the self-check's observations (`value`, hostile until checked) against the bar: every
 * id unprivileged (inside, and as the parent namespace sees it), no capabilities, no new
 * privileges, an empty environment, only its own processes, a root holding only `expectedRoot`,
 * no `/etc` or `/home`, nothing writable but its own directory, no process creation, no network
 * interface but loopback.
 *
 * @internal
 */
export const evaluate = (value: unknown, expectedRoot: ReadonlyArray<string>): ReadonlyArray<Check> => {
  const seen = typeof value === "object" && value !== null && !isList(value) ? value as Record<string, unknown> : {}
  const ids = (key: string) => isList(seen[key]) ? (seen[key] as ReadonlyArray<unknown>) : []
  const uids = ids("uid")
  const gids = ids("gid")
  const hostUid = typeof uids[0] === "number" ? mappedUid(uids[0], seen.uidMap) : undefined
  const root = isList(seen.root) ? seen.root.filter((name): name is string => typeof name === "string") : []
  const pids = ids("pids")
  const show = (key: string) => JSON.stringify(seen[key] ?? null)
  const checks: Array<Check> = [
    {
      name: "runs as an unprivileged user",
      held: uids.length === 3 && gids.length === 3 && [...uids, ...gids].every((id) => typeof id === "number" && id !== 0) &&
        isList(seen.groups) && seen.groups.every((id) => id !== 0) && hostUid !== undefined && hostUid !== 0,
      detail: `uid ${show("uid")}, gid ${show("gid")}, groups ${show("groups")}, uid outside ${hostUid ?? "unknown"}`
    },
    {
      name: "holds no capabilities and cannot gain any",
      held: seen.capEff === "0000000000000000" && seen.capPrm === "0000000000000000" && seen.noNewPrivs === "1",
      detail: `CapEff ${show("capEff")}, CapPrm ${show("capPrm")}, NoNewPrivs ${show("noNewPrivs")}`
    },
    {
      name: "sees no host environment",
      held: (seen.environ === 0 || seen.environ === "errno 13") && seen.variables === 0,
      detail: `initial environment ${show("environ")} (bytes, or unreadable), ${show("variables")} variables`
    },
    {
      name: "sees only its own processes",
      held: pids.length >= 1 && pids.length <= 2 && pids.every((pid) => typeof pid === "number" && pid <= 2),
      detail: `pids ${show("pids")}`
    },
    {
      name: "sees only the interpreter's files",
      held: JSON.stringify(root) === JSON.stringify([...expectedRoot].sort()) && seen.etc === ENOENT && seen.home === ENOENT,
      detail: `root ${JSON.stringify(root)} (expected ${JSON.stringify([...expectedRoot].sort())}), /etc ${show("etc")}, /home ${
        show("home")
      }`
    },
    {
      name: "writes only its own directory",
      held: seen.writeOwn === "ok" && typeof seen.writeRoot === "number" && typeof seen.writeParent === "number",
      detail: `own ${show("writeOwn")}, / ${show("writeRoot")}, parent ${show("writeParent")}`
    },
    { name: "cannot create processes", held: typeof seen.fork === "number", detail: `fork ${show("fork")}` },
    {
      name: "has no network",
      held: isList(seen.interfaces) && seen.interfaces.every((name) => name === "lo"),
      detail: `interfaces ${show("interfaces")}`
    }
  ]
  return checks
}
