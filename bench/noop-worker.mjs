// No-op behaviours for bench:worker: the same work for axon's worker placement and raw piscina.
export default function noopTask(value) {
  return value;
}

export function noop() {
  return null;
}

export function closePort(task) {
  task.port.close();
  return null;
}

export function taskShaped() {
  return { ok: true, output: null, sent: 0, dropped: 0 };
}
