/** @module A context that lacks the permission a call needs. */
import { AxonError, type AxonErrorOptions } from './axon-error.js';

/** What kind of thing was refused. */
export type PermissionSubject = 'agent' | 'tool' | 'role';

/**
 * The context's permissions (or the target's own required permissions) forbid the call.
 * Code `POLICY_DENIED`. Nothing ran.
 */
export class PermissionDeniedError extends AxonError {
  readonly code = 'POLICY_DENIED' as const;
  readonly subject: PermissionSubject;
  readonly target: string;

  constructor(subject: PermissionSubject, target: string, options: AxonErrorOptions = {}) {
    super(`permission denied: the context may not use ${subject} "${target}"`, {
      ...options,
      details: { ...options.details, subject, target },
    });
    this.subject = subject;
    this.target = target;
  }
}
