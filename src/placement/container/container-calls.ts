/**
 * @module A container's host call, made on its step's endpoint: the method by name (one of
 * {@link CALLS}, checked by the pool), its arguments as they came in JSON.
 */
import type { StepEndpoint } from '../worker/worker-pool.js';
import type { HostCalls, HostReply } from '../worker/worker-protocol.js';

/** The host calls a container may make, by name. */
export const CALLS: ReadonlySet<keyof HostCalls> = new Set([
  'delegate',
  'callTool',
  'chat',
  'fact',
  'fs',
  'memory',
]);

/** Makes `method` with `args` (the step id already taken off) on `endpoint`. */
export function hostCall(
  endpoint: StepEndpoint,
  method: keyof HostCalls,
  args: readonly unknown[],
): Promise<HostReply<unknown>> {
  // JSON has no `undefined`: an absent argument comes as null.
  const a = args.map((v: unknown) => (v === null ? undefined : v));
  switch (method) {
    case 'delegate':
      return endpoint.delegate(a[0] as string, a[1] as string, a[2]);
    case 'callTool':
      return endpoint.callTool(a[0] as string, a[1]);
    case 'chat':
      return endpoint.chat(a[0] as never, a[1] ?? {});
    case 'fact':
      return endpoint.fact(a[0] as never);
    case 'fs':
      return endpoint.fs(a[0] as never);
    case 'memory':
      return endpoint.memory(a[0] as never, a[1]);
  }
}
