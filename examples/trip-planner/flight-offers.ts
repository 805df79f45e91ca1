/**
 * @module The trip-planner's flight data: the offers `search_flights` finds for a route,
 * date and seed, and the words that describe the offer chosen among them.
 */
import { createHash } from 'node:crypto';

/** A flight offer, as `search_flights` returns it. */
export interface FlightOffer {
  readonly flight: string;
  readonly from: string;
  readonly to: string;
  readonly date: string;
  readonly departs: string;
  readonly arrives: string;
  readonly priceEur: number;
}

/** What the `flights` agent answers: the offer it chose and every offer it chose from. */
export interface FlightChoice {
  readonly offer: FlightOffer;
  readonly offers: readonly FlightOffer[];
}

/** The part of the day a flight leaves in. */
export type DayPeriod = 'morning' | 'afternoon' | 'evening' | 'night';

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * Three offers for a route and date, derived from `seed`: the same arguments always give the
 * same offers, another seed other prices and times. Departures fall between 06:00 and 19:45.
 */
export function offersFor(from: string, to: string, date: string, seed: number): FlightOffer[] {
  const h = createHash('sha256').update(`${seed}:${from}-${to}-${date}`).digest();
  return [0, 1, 2].map((i) => {
    const dep = 6 * 60 + ((h[i] ?? 0) % 14) * 60 + ((h[i + 3] ?? 0) % 4) * 15;
    const arr = dep + 95 + ((h[i + 6] ?? 0) % 6) * 10;
    return {
      flight: `AX ${100 + ((h[i + 9] ?? 0) % 800)}`,
      from,
      to,
      date,
      departs: `${pad(Math.floor(dep / 60) % 24)}:${pad(dep % 60)}`,
      arrives: `${pad(Math.floor(arr / 60) % 24)}:${pad(arr % 60)}`,
      priceEur: 59 + ((h[i + 12] ?? 0) % 180),
    };
  });
}

/** The part of the day of a `HH:MM` time: morning 05–11, afternoon 12–17, evening 18–21. */
export function dayPeriod(time: string): DayPeriod {
  const hour = Number(time.slice(0, 2));
  if (hour >= 5 && hour < 12) return 'morning';
  if (hour >= 12 && hour < 18) return 'afternoon';
  if (hour >= 18 && hour < 22) return 'evening';
  return 'night';
}

const RANKS = ['the cheapest', 'the second cheapest', 'the third cheapest'];

/**
 * Why the chosen offer, in words that follow the data: its price rank among the offers
 * and the part of the day it leaves in, e.g. "the cheapest of the 3 flights on offer and
 * leaves in the evening".
 */
export function describeChoice({ offer, offers }: FlightChoice): string {
  const when = dayPeriod(offer.departs);
  const leaves = when === 'night' ? 'leaves at night' : `leaves in the ${when}`;
  if (offers.length <= 1) return `the only flight on offer and ${leaves}`;
  const cheaper = offers.filter((o) => o.priceEur < offer.priceEur).length;
  const rank = RANKS[cheaper] ?? `number ${cheaper + 1} by price`;
  return `${rank} of the ${offers.length} flights on offer and ${leaves}`;
}
