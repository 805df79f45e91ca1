import { describe, expect, it } from 'vitest';
import {
  dayPeriod,
  describeChoice,
  offersFor,
  type FlightOffer,
} from '../../examples/trip-planner/flight-offers.js';

function offer(departs: string, priceEur: number): FlightOffer {
  return {
    flight: `AX ${priceEur}`,
    from: 'LHR',
    to: 'BER',
    date: '2025-01-07',
    departs,
    arrives: '23:59',
    priceEur,
  };
}

describe('offersFor', () => {
  it('gives the same offers for the same seed and other offers for another', () => {
    const a = offersFor('LHR', 'BER', '2025-01-07', 1);
    expect(offersFor('LHR', 'BER', '2025-01-07', 1)).toEqual(a);
    expect(offersFor('LHR', 'BER', '2025-01-07', 2)).not.toEqual(a);
    expect(a).toHaveLength(3);
    for (const o of a) expect(o.departs >= '06:00' && o.departs <= '19:45').toBe(true);
  });
});

describe('dayPeriod', () => {
  it.each([
    ['04:59', 'night'],
    ['05:00', 'morning'],
    ['11:59', 'morning'],
    ['12:00', 'afternoon'],
    ['17:59', 'afternoon'],
    ['18:00', 'evening'],
    ['21:59', 'evening'],
    ['22:00', 'night'],
  ])('%s is %s', (time, period) => {
    expect(dayPeriod(time)).toBe(period);
  });
});

describe('describeChoice', () => {
  const [evening, morning, afternoon] = [
    offer('18:00', 72),
    offer('08:30', 90),
    offer('13:15', 120),
  ];
  const offers = [evening, morning, afternoon];

  it('calls the cheapest offer the cheapest, with the part of day it leaves in', () => {
    expect(describeChoice({ offer: evening, offers })).toBe(
      'the cheapest of the 3 flights on offer and leaves in the evening',
    );
  });

  it('ranks an offer that is not the cheapest by price', () => {
    expect(describeChoice({ offer: morning, offers })).toBe(
      'the second cheapest of the 3 flights on offer and leaves in the morning',
    );
    expect(describeChoice({ offer: afternoon, offers })).toBe(
      'the third cheapest of the 3 flights on offer and leaves in the afternoon',
    );
  });

  it('says so when there is only one offer, and when it leaves at night', () => {
    const late = offer('23:10', 80);
    expect(describeChoice({ offer: late, offers: [late] })).toBe(
      'the only flight on offer and leaves at night',
    );
  });
});
