/** @module A PostgreSQL URL as axon shows it: in banners, messages and logs. */

/** A PostgreSQL URL without its password or parameters, as a banner may show it. */
export function shownPostgres(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    u.search = '';
    return u.toString();
  } catch {
    return 'the URL given';
  }
}
