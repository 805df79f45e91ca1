/** @module A text view of a trace: names, durations, tokens, cost and nesting (seed 000). */

/** One node of a trace tree. */
export interface TraceNode {
  /** What ran, e.g. `agent planner` or `tool search_flights`. */
  readonly label: string;
  readonly startedAt: number | null;
  readonly endedAt: number | null;
  readonly tokensIn: number;
  readonly tokensOut: number;
  readonly costUsd: number;
  /** An error code when the node failed, else `null`. */
  readonly error: string | null;
  readonly children: readonly TraceNode[];
}

/** Options of {@link renderTraceTree}. */
export interface RenderTraceTreeOptions {
  /** Trace id shown in the labels (`[t_<first 6 hex>.1.2]`). */
  readonly traceId?: string;
}

function summary(node: TraceNode): string {
  const parts: string[] = [];
  if (node.startedAt !== null && node.endedAt !== null) {
    parts.push(
      `${Math.max(0, Math.round(node.endedAt - node.startedAt)).toLocaleString('en-US')}ms`,
    );
  } else {
    parts.push('running');
  }
  const tokens = node.tokensIn + node.tokensOut;
  if (tokens > 0) parts.push(`${tokens.toLocaleString('en-US')} tok`);
  if (node.costUsd > 0) parts.push(`$${node.costUsd.toFixed(3)}`);
  return `(${parts.join(', ')})${node.error ? ` !${node.error}` : ''}`;
}

/**
 * Renders trace trees like seed 000's example:
 *
 * ```
 * [t_4bf92f] agent planner (412ms, 96 tok)
 * +-- [t_4bf92f.1] agent calendar (12ms)
 * +-- [t_4bf92f.2] agent flights (30ms)
 * |   +-- [t_4bf92f.2.1] tool search_flights (9ms)
 * ```
 */
export function renderTraceTree(
  roots: readonly TraceNode[],
  options: RenderTraceTreeOptions = {},
): string {
  const tag = `t_${(options.traceId ?? '').slice(0, 6) || 'trace'}`;
  const lines: string[] = [];
  const walk = (
    node: TraceNode,
    id: string,
    prefix: string,
    isLast: boolean,
    depth: number,
  ): void => {
    const branch = depth === 0 ? '' : '+-- ';
    lines.push(`${prefix}${branch}[${id}] ${node.label} ${summary(node)}`);
    const childPrefix = depth === 0 ? '' : prefix + (isLast ? '    ' : '|   ');
    node.children.forEach((child, i) => {
      walk(child, `${id}.${i + 1}`, childPrefix, i === node.children.length - 1, depth + 1);
    });
  };
  roots.forEach((root, i) => {
    walk(root, roots.length === 1 ? tag : `${tag}.${i + 1}`, '', true, 0);
  });
  return lines.join('\n');
}
