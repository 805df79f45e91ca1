/**
 * @module Comlink over a worker link: comlink's messages travel as `rpc` messages on the
 * link, beside the steps' stream messages.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Endpoint } from 'comlink';

type Listener = (event: { readonly data: unknown }) => void;
type ListenerObject = { handleEvent(event: { readonly data: unknown }): void };

/** A comlink endpoint that sends and receives only the `rpc` messages of `port`. */
export function rpcEndpoint(port: MessagePort): Endpoint {
  const handlers = new Map<Listener | ListenerObject, (message: unknown) => void>();
  const endpoint = {
    postMessage(data: unknown, transfer?: readonly MessagePort[]): void {
      port.postMessage({ t: 'rpc', data }, transfer ? [...transfer] : []);
    },
    addEventListener(_type: string, listener: Listener | ListenerObject): void {
      const handler = (message: unknown): void => {
        const m = message as { t?: unknown; data?: unknown } | null;
        if (m?.t !== 'rpc') return;
        const event = { data: m.data };
        if (typeof listener === 'function') listener(event);
        else listener.handleEvent(event);
      };
      handlers.set(listener, handler);
      port.on('message', handler);
    },
    removeEventListener(_type: string, listener: Listener | ListenerObject): void {
      const handler = handlers.get(listener);
      if (!handler) return;
      port.off('message', handler);
      handlers.delete(listener);
    },
  };
  return endpoint;
}
