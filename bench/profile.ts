// Summary of the V8 CPU profiles written by Tollgate's processes during `npm run bench -- --profile`:
// where the worker's busy time went, by area (Tollgate's code, undici, uWS, LMDB, GC, Node
// internals) and by function (self time). Idle time is left out of the percentages.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export interface ProfileSummary {
  file: string;
  busyMs: number;
  idleMs: number;
  areas: { area: string; ms: number; share: number }[];
  functions: { name: string; ms: number; share: number }[];
}

function area(url: string, name: string): string {
  if (name === '(garbage collector)') return 'garbage collector';
  if (name === '(program)') return 'native / uWS / syscalls (program)';
  if (url.includes('/node_modules/undici/')) return 'undici';
  if (url.includes('/node_modules/lmdb/') || url.includes('/node_modules/msgpackr/')) return 'lmdb + msgpackr';
  if (url.includes('/node_modules/pino') || url.includes('/node_modules/sonic-boom/')) return 'pino';
  if (url.includes('/node_modules/')) return 'other packages';
  if (url.includes('/dist/src/')) return 'Tollgate (dist/src)';
  if (url.startsWith('node:') || url === '') return 'Node internals';
  return 'other';
}

export function summarizeProfile(path: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // self time per node from the sample stream (timeDeltas are µs between samples)
  const selfMicroseconds = new Map<number, number>();
  for (let index = 0; index < profile.samples.length; index += 1) {
    const id = profile.samples[index];
    selfMicroseconds.set(id, (selfMicroseconds.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  }
  let idle = 0;
  let busy = 0;
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, microseconds] of selfMicroseconds) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') { idle += microseconds; continue; }
    busy += microseconds;
    const areaName = area(url, functionName);
    areas.set(areaName, (areas.get(areaName) ?? 0) + microseconds);
    const shortUrl = url.replace(/^.*\/(dist|node_modules)\//, '$1/');
    const name = `${functionName || '(anonymous)'} ${shortUrl ? `${shortUrl}:${lineNumber + 1}` : ''}`.trim();
    functions.set(name, (functions.get(name) ?? 0) + microseconds);
  }
  const rank = (map: Map<string, number>) => [...map].sort((left, right) => right[1] - left[1])
    .map(([name, microseconds]) => ({ name, ms: microseconds / 1000, share: busy > 0 ? microseconds / busy : 0 }));
  return {
    file: path, busyMs: busy / 1000, idleMs: idle / 1000,
    areas: rank(areas).map(({ name, ms, share }) => ({ area: name, ms, share })),
    functions: rank(functions).slice(0, top),
  };
}

/** Summaries of every profile in the directory, busiest first (the worker under load comes first). */
export function summarizeProfiles(directory: string): ProfileSummary[] {
  let files: string[];
  try { files = readdirSync(directory).filter((file) => file.endsWith('.cpuprofile')); } catch { return []; }
  return files.map((file) => summarizeProfile(join(directory, file))).sort((left, right) => right.busyMs - left.busyMs);
}

export function renderProfile(summary: ProfileSummary): string {
  const lines = [
    `CPU profile of the busiest Tollgate process (${summary.file}): ${summary.busyMs.toFixed(0)} ms busy, ${summary.idleMs.toFixed(0)} ms idle`, '',
    '| area | busy ms | share |', '|---|---:|---:|',
    ...summary.areas.map((entry) => `| ${entry.area} | ${entry.ms.toFixed(0)} | ${(entry.share * 100).toFixed(1)}% |`),
    '', '| function (self time) | ms | share |', '|---|---:|---:|',
    ...summary.functions.map((entry) => `| \`${entry.name}\` | ${entry.ms.toFixed(0)} | ${(entry.share * 100).toFixed(1)}% |`),
  ];
  return lines.join('\n');
}
