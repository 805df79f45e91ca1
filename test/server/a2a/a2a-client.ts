/**
 * @module What the A2A tests share: the SDK's own client made from a server's card URL
 * (with an API key when given), a user message in the SDK's shape, and the stream of a task
 * read to its end.
 */
import { randomUUID } from 'node:crypto';
import {
  Role,
  TaskState,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';

/** The SDK's client of the server at `url`, from its card (`/.well-known/agent-card.json`). */
export function a2aClient(url: string, key?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: {
        ...(init?.headers as Record<string, string> | undefined),
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      },
    });
  // The SDK types its options as a class it does not export; a plain object is what it reads.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
  const options: ConstructorParameters<typeof JsonRpcTransportFactory>[0] = { fetchImpl };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory(options)],
    }),
  );
  return factory.createFromUrl(url);
}

/** A user's text message, naming `skill` in its metadata when given. */
export function userMessage(text: string, skill?: string): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text', value: text },
        mediaType: 'text/plain',
        filename: '',
        metadata: undefined,
      },
    ],
    metadata: skill === undefined ? undefined : { skill },
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The request of `message/send` (`SendMessage`) with `message`. */
export function sendRequest(message: Message): SendMessageRequest {
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

/** A task (not a bare message) or a failure saying what came instead. */
export function asTask(result: Message | Task): Task {
  if (!('status' in result)) throw new Error(`expected a task, got ${JSON.stringify(result)}`);
  return result;
}

/** The text of a task's artifact `output`, its text parts joined. */
export function outputText(task: Task): string {
  const artifact = task.artifacts.find((a) => a.artifactId === 'output');
  return (artifact?.parts ?? [])
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .join('');
}

/** The step and run a task's metadata names. */
export function axonIds(task: Task): { run_id: string; step_id: string; agent: string } {
  return (task.metadata as { axon: { run_id: string; step_id: string; agent: string } }).axon;
}

/** The kind of each event of a stream (`task`, `statusUpdate:WORKING`, `artifactUpdate`). */
export function kindOf(event: StreamResponse): string {
  const p = event.payload;
  if (!p) return 'none';
  if (p.$case === 'statusUpdate') {
    const state = TaskState[p.value.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED];
    return `statusUpdate:${state.replace('TASK_STATE_', '')}`;
  }
  return p.$case;
}
