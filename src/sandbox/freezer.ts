/**
 * Freezing an execution environment between invocations, and its CPU time, from the host.
 *
 * Between invocations an environment is frozen like an AWS Lambda execution environment: work a
 * handler leaves behind (timers, unresolved promises, a busy loop) gets no CPU until the next
 * invocation. Frozen with job-control signals to the environment's process group: SIGSTOP to
 * the group, then SIGCONT to the group leader alone when it is the backstop (`timeout`, which must
 * keep counting so it can still kill the tree); SIGCONT to the group before the next invocation.
 * SIGKILL (timeout, idle kill, drain) ends stopped processes as well. (Signals rather than the
 * cgroup freezer: cgroup v2 is not mounted on every host, v1 hierarchies are often owned by the
 * host's supervisor, and signals need no privilege over processes of the sandbox user.)
 *
 * CPU time: user + system time (`utime` + `stime`, fields 14 and 15 of `/proc/<pid>/stat`, in
 * USER_HZ = 100 ticks per second: 10 ms resolution, see proc(5)) summed over the group's
 * processes, read by the host — never reported by the sandboxed code, which could lie.
 */
import fs from 'node:fs';

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on Linux for every architecture's user ABI). */
const USER_HZ = 100;

/** Fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, …; null when the process is gone. */
function statFields(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/**
 * When process `pid` started, in clock ticks since boot (field 22 of `/proc/<pid>/stat`): with the
 * pid, it names one process across pid reuse. Null when the process is gone or `/proc` is unavailable.
 */
export function processStartTicks(pid: number): string | null {
  return statFields(pid)?.[19] ?? null;
}

/**
 * The pids of process group `pgid` (scans `/proc` once; [] where `/proc` is unavailable). The
 * members of an environment's group are fixed once its module is loaded (a sandbox cannot start
 * processes), so callers cache the answer.
 */
export function groupMembers(pgid: number): number[] {
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const n of names) {
    const pid = Number(n);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const f = statFields(pid);
    if (f && Number(f[2]) === pgid) out.push(pid);
  }
  return out;
}

/** User + system CPU time of `pids`, ms (processes already gone count 0); null when none is readable. */
export function cpuTimeMs(pids: readonly number[]): number | null {
  let ticks = 0;
  let seen = 0;
  for (const pid of pids) {
    const f = statFields(pid);
    if (!f) continue;
    seen++;
    ticks += Number(f[11]) + Number(f[12]);
  }
  return seen ? (ticks * 1000) / USER_HZ : null;
}

/**
 * Stop every process of group `pgid`; when `leaderRuns` (the leader is the backstop `timeout`),
 * let the leader go on. False when the group is gone.
 */
export function freezeGroup(pgid: number, leaderRuns: boolean): boolean {
  try {
    process.kill(-pgid, 'SIGSTOP');
    if (leaderRuns) process.kill(pgid, 'SIGCONT');
    return true;
  } catch {
    return false;
  }
}

/** Continue every process of group `pgid`. False when the group is gone. */
export function thawGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, 'SIGCONT');
    return true;
  } catch {
    return false;
  }
}
