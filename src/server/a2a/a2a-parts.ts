/**
 * @module What an A2A message says to an axon agent, and what an agent's step says back: a
 * message's text parts become the agent's `message` (joined by new lines) and its one data
 * part, an object, the agent's `args`; a part of another kind is refused, never dropped. A
 * step's tokens become appended chunks of the artifact `output`, its output that artifact
 * whole (a string as a text part, anything else as a data part), and its error the message
 * of a failed status.
 */
import { randomUUID } from 'node:crypto';
import { Role, type Artifact, type Message, type Part } from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError } from '@a2a-js/sdk/errors';

/** The input of an agent step made from a message: API.md's `{ message, args? }`. */
export interface AgentRequest {
  readonly message: string;
  readonly args?: Readonly<Record<string, unknown>>;
}

/** The id (and name) of the artifact a task's answer is in. */
export const OUTPUT_ARTIFACT = 'output';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The agent input a message asks for: its text parts joined by new lines, and its data part
 * (at most one, a JSON object) as `args`. A file part (raw bytes or a URL) is
 * `ContentTypeNotSupportedError`; a second data part, or one that is not an object,
 * `RequestMalformedError`.
 */
export function agentRequestOf(message: Message): AgentRequest {
  const texts: string[] = [];
  let args: Record<string, unknown> | undefined;
  message.parts.forEach((part, i) => {
    const content = part.content;
    switch (content?.$case) {
      case 'text':
        texts.push(content.value);
        return;
      case 'data':
        if (!isPlainObject(content.value)) {
          throw new RequestMalformedError(
            `message part ${i}: a data part is the agent's args, a JSON object`,
          );
        }
        if (args !== undefined) {
          throw new RequestMalformedError(
            `message part ${i}: a message has one data part at most (the agent's args)`,
          );
        }
        args = content.value;
        return;
      case 'raw':
      case 'url':
        throw new ContentTypeNotSupportedError(
          `message part ${i}: axon's agents take text and one data part (their args), not files`,
        );
      default:
        throw new RequestMalformedError(`message part ${i} has no content`);
    }
  });
  return { message: texts.join('\n'), ...(args === undefined ? {} : { args }) };
}

/** A text part. */
export function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    mediaType: 'text/plain',
    filename: '',
    metadata: undefined,
  };
}

/** The part an agent's output is: a string as text, anything else as JSON data. */
export function outputPart(output: unknown): Part {
  if (typeof output === 'string') return textPart(output);
  return {
    content: { $case: 'data', value: output ?? null },
    mediaType: 'application/json',
    filename: '',
    metadata: undefined,
  };
}

/** The artifact `output` holding `parts`. */
export function outputArtifact(parts: Part[]): Artifact {
  return {
    artifactId: OUTPUT_ARTIFACT,
    name: OUTPUT_ARTIFACT,
    description: "the agent's answer",
    parts,
    metadata: undefined,
    extensions: [],
  };
}

/** A message from the agent in task `taskId` (a status's message): `text`, with `metadata`. */
export function agentMessage(
  taskId: string,
  contextId: string,
  text: string,
  metadata?: Record<string, unknown>,
): Message {
  return {
    messageId: randomUUID(),
    taskId,
    contextId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}
