import { map, Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { isolated } from '../../src/streams/isolated-observable.js';

describe('isolated: an Observable whose subscribers cannot hurt the process', () => {
  it('hands each throw to onFailure, with where it happened, and delivers to the others', () => {
    const failures: string[] = [];
    const subject = new Subject<number>();
    const events = isolated(subject.asObservable(), (err, where) => {
      failures.push(`${where}:${(err as Error).message}`);
    });
    const seen: number[] = [];
    events.subscribe({
      next: (n) => {
        throw new Error(`next ${n}`);
      },
      complete: () => {
        throw new Error('done');
      },
    });
    // An operator's own throw becomes an error no subscriber handles.
    events
      .pipe(
        map((n) => {
          if (n === 2) throw new Error('map 2');
          return n;
        }),
      )
      .subscribe(() => undefined);
    events.subscribe((n) => seen.push(n));
    subject.next(1);
    subject.next(2);
    subject.complete();
    expect(seen).toEqual([1, 2]);
    expect(failures).toEqual(['next:next 1', 'next:next 2', 'error:map 2', 'complete:done']);
  });
});
