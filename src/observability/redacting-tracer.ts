/**
 * @module A tracer whose spans never carry configured fields: an attribute whose name (or a
 * dotted part of it, `gen_ai.tool.args.password`) is one of the keys is recorded as
 * `[REDACTED]`, on the span's start, `setAttribute(s)` and its events alike.
 */
import type {
  Attributes,
  AttributeValue,
  Context,
  Span,
  SpanOptions,
  Tracer,
} from '@opentelemetry/api';
import { REDACTED } from './logger.js';

/** `tracer` with the attributes named in `keys` redacted; `tracer` itself with none. */
export function redactingTracer(tracer: Tracer, keys: readonly string[]): Tracer {
  if (keys.length === 0) return tracer;
  const set = new Set(keys.map((k) => k.toLowerCase()));
  const hidden = (name: string): boolean =>
    name
      .toLowerCase()
      .split('.')
      .some((part) => set.has(part));
  const value = (name: string, v: AttributeValue): AttributeValue => (hidden(name) ? REDACTED : v);
  const attributes = (a: Attributes | undefined): Attributes | undefined => {
    if (!a) return a;
    const out: Attributes = {};
    for (const [k, v] of Object.entries(a)) if (v !== undefined) out[k] = value(k, v);
    return out;
  };
  const wrapSpan = (span: Span): Span =>
    new Proxy(span, {
      get(target, prop, receiver) {
        if (prop === 'setAttribute') {
          return (k: string, v: AttributeValue) => {
            target.setAttribute(k, value(k, v));
            return receiver as Span;
          };
        }
        if (prop === 'setAttributes') {
          return (a: Attributes) => {
            target.setAttributes(attributes(a) ?? {});
            return receiver as Span;
          };
        }
        if (prop === 'addEvent') {
          return (name: string, a?: Attributes, time?: Parameters<Span['addEvent']>[2]) => {
            target.addEvent(name, attributes(a), time);
            return receiver as Span;
          };
        }
        const got: unknown = Reflect.get(target, prop, target);
        return typeof got === 'function'
          ? (got as (...args: unknown[]) => unknown).bind(target)
          : got;
      },
    });
  // startActiveSpan is not used by axon; spans made that way are left as the tracer makes them.
  return new Proxy(tracer, {
    get(target, prop) {
      if (prop === 'startSpan') {
        return (name: string, options?: SpanOptions, context?: Context): Span => {
          const redacted: SpanOptions | undefined = options?.attributes
            ? { ...options, attributes: attributes(options.attributes) ?? {} }
            : options;
          return wrapSpan(target.startSpan(name, redacted, context));
        };
      }
      const got: unknown = Reflect.get(target, prop, target);
      return typeof got === 'function'
        ? (got as (...args: unknown[]) => unknown).bind(target)
        : got;
    },
  });
}
