/**
 * @module Which methods a path takes, read from Fastify's route table: what a 405 lists in
 * its `Allow` header when a known path is asked with a method it does not take (API.md,
 * "Common"). Nothing here lists paths: every route registered, now or later, counts.
 */
import type { FastifyInstance, HTTPMethods } from 'fastify';

/**
 * The methods that have a route for `url` (a request's URL, its query ignored), sorted; `HEAD`
 * wherever `GET` is (Fastify answers it). Empty: no route has that path.
 */
export function allowedMethods(app: FastifyInstance, url: string): string[] {
  // Fastify's types omit it, but `findRoute` answers null when no route matches.
  const found = (method: HTTPMethods): boolean =>
    (app.findRoute({ method, url }) as object | null) !== null;
  return (app.supportedMethods as HTTPMethods[]).filter(found).sort();
}
