/**
 * @module The trace UI's stylesheet, `ui/app.css`: system fonts, light and dark by the
 * browser's preference, a colour per status (`[data-status=...]`), the trace tree indented by
 * nesting. Nothing loaded from elsewhere.
 */

/** `ui/app.css`. */
export const PAGE_CSS = `:root {
  color-scheme: light dark;
  --bg: #fbfbfa;
  --fg: #1d1d1f;
  --muted: #6b6b70;
  --line: #deded9;
  --panel: #ffffff;
  --hover: #f0f0ec;
  --accent: #2f5bd3;
  --running: #2f5bd3;
  --ok: #1f8a4c;
  --bad: #c2362f;
  --wait: #a86a00;
  font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #161618;
    --fg: #e8e8ea;
    --muted: #9a9aa2;
    --line: #2e2e33;
    --panel: #1d1d20;
    --hover: #26262b;
    --accent: #7b9cff;
    --running: #7b9cff;
    --ok: #52c07f;
    --bad: #ff6b62;
    --wait: #e0a33a;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
[hidden] { display: none !important; }
.muted { color: var(--muted); }

.bar { display: flex; align-items: center; gap: 20px; padding: 8px 16px;
  border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-size: 15px; }
nav { display: flex; gap: 4px; }
nav a { padding: 4px 10px; border-radius: 6px; color: var(--fg); }
nav a.active { background: var(--hover); font-weight: 600; }
.auth { margin-left: auto; display: flex; align-items: center; gap: 8px; }
.auth form { display: flex; align-items: center; gap: 6px; }
.auth input { width: 260px; }
input, select, button { font: inherit; color: inherit; background: var(--panel);
  border: 1px solid var(--line); border-radius: 6px; padding: 3px 8px; }
button { cursor: pointer; }

.banner { margin: 0; padding: 8px 16px; background: color-mix(in srgb, var(--bad) 15%, var(--bg));
  color: var(--bad); border-bottom: 1px solid var(--line); }
main { padding: 12px 16px 40px; }
.toolbar { display: flex; align-items: baseline; gap: 14px; margin-bottom: 10px; }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 0; }
h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted);
  margin: 14px 0 4px; }
.empty, .note { color: var(--muted); }
.note { border-left: 3px solid var(--wait); padding-left: 8px; }
.note.bad { border-left-color: var(--bad); color: var(--bad); }
h2.section { margin: 16px 0 8px; }

.status { font-size: 12px; font-weight: 600; color: var(--muted); }
.status::before { content: '\\25CF\\00A0'; }
[data-status='running'] .status, .status[data-status='running'],
[data-status='started'] .status, .status[data-status='started'],
[data-status='queued'] .status, .status[data-status='queued'] { color: var(--running); }
[data-status='waiting'] .status, .status[data-status='waiting'],
[data-status='cancelling'] .status, .status[data-status='cancelling'] { color: var(--wait); }
[data-status='succeeded'] .status, .status[data-status='succeeded'],
[data-status='completed'] .status, .status[data-status='completed'] { color: var(--ok); }
[data-status='failed'] .status, .status[data-status='failed'],
[data-status='crashed'] .status, .status[data-status='crashed'],
[data-status='killed'] .status, .status[data-status='killed'],
[data-status='cancelled'] .status, .status[data-status='cancelled'] { color: var(--bad); }

table.runs { width: 100%; border-collapse: collapse; background: var(--panel);
  border: 1px solid var(--line); }
.runs th, .runs td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
  white-space: nowrap; }
.runs th { font-size: 12px; color: var(--muted); font-weight: 500; }
.runs tbody tr { cursor: pointer; }
.runs tbody tr:hover { background: var(--hover); }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.runs code { color: var(--muted); }
.runs td.input { max-width: 24em; overflow: hidden; text-overflow: ellipsis; }

.workflows { display: grid; grid-template-columns: repeat(auto-fill, minmax(22em, 1fr)); gap: 10px; }
.workflow { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px; }
.workflow-head { display: flex; align-items: baseline; gap: 10px; }
.workflow-head h3 { font-size: 15px; text-transform: none; letter-spacing: 0; color: var(--fg);
  margin: 0; }
.facts { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 6px 0 8px; }
.facts dt { color: var(--muted); }
.facts dt::after { content: ':'; }
.facts dd { margin: 0; }
.trigger { display: flex; gap: 6px; }
.trigger input { flex: 1; min-width: 0; }
button:disabled { opacity: .6; cursor: progress; }
.result { margin: 6px 0 0; }
.result[data-state='ok'] { color: var(--ok); }
.result[data-state='error'] { color: var(--bad); }

.figures { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 0 0 10px; }
.figures dt, .detail dt { color: var(--muted); }
.figures dt::after, .detail dt::after { content: ':'; }
.figures dd { margin: 0 0 0 -12px; }
.split { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 14px;
  align-items: start; }
@media (max-width: 900px) { .split { grid-template-columns: 1fr; } }
.trace { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: 6px; overflow-x: auto; }

.tree, .tree ul { list-style: none; margin: 0; padding: 0; }
.tree ul { margin-left: 14px; padding-left: 10px; border-left: 1px dotted var(--line); }
.node { display: grid; grid-template-columns: minmax(8em, 1fr) 6.5em 7.5em 5.5em 10em 4.5em;
  gap: 8px; align-items: baseline; padding: 3px 6px; border-radius: 5px; cursor: pointer; }
.node:hover { background: var(--hover); }
.node:focus-visible { outline: 2px solid var(--accent); }
.node.selected { background: color-mix(in srgb, var(--accent) 14%, var(--panel)); }
.node .name { font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.node .type { color: var(--muted); font-size: 12px; }
.node-extra.turn { margin: 0 6px 6px 6px; }
.turn-text, .turn-output { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: 4px 8px; max-height: 9em; overflow: auto; }
.turn-text:empty::before { content: 'no tokens yet'; color: var(--muted); }
.turn-output { margin-top: 4px; color: var(--muted); }
.turn-error { margin: 4px 0 0; color: var(--bad); }
.toolbar > a:last-child { margin-left: auto; }

.detail { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px; position: sticky; top: 8px; max-height: calc(100vh - 16px); overflow: auto; }
.detail-head { display: flex; align-items: baseline; gap: 10px; }
.detail-head .close { margin-left: auto; color: var(--muted); }
.detail dl { display: grid; grid-template-columns: auto 1fr; gap: 2px 10px; margin: 8px 0 0; }
.detail dd { margin: 0; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
pre.text { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: 8px; min-height: 2.5em; max-height: 40vh; overflow: auto; }
pre.text:empty::before { content: 'no tokens'; color: var(--muted); }
.events, .calls { margin: 0; padding-left: 18px; }
.events li, .calls li { margin: 2px 0; }
.calls:empty::before, .events:empty::before { content: 'none'; color: var(--muted); margin-left: -18px; }
.event-type { font-weight: 600; }
.event[data-type='error'] { color: var(--bad); }
.event pre { margin-top: 4px; }
details { margin-top: 12px; }
summary { cursor: pointer; color: var(--muted); }
`;
