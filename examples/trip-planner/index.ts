/**
 * @module The trip-planner example: `planner` delegates to `calendar` and `flights`;
 * `flights` calls the tool `search_flights`; `planner` streams its plan from the scripted
 * engine.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { needsData } from '../../src/actors/agent-result.js';
import { chatTokens } from '../../src/engines/chat-tokens.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { defineTool } from '../../src/tools/define-tool.js';
import type { Example, ExampleOptions } from '../example.js';

const CITIES: Record<string, { readonly code: string; readonly name: string }> = {
  berlin: { code: 'BER', name: 'Berlin' },
  paris: { code: 'CDG', name: 'Paris' },
  tokyo: { code: 'HND', name: 'Tokyo' },
  lisbon: { code: 'LIS', name: 'Lisbon' },
  rome: { code: 'FCO', name: 'Rome' },
};
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

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

function destinationOf(message: string): { readonly code: string; readonly name: string } {
  const lower = message.toLowerCase();
  for (const [key, city] of Object.entries(CITIES)) if (lower.includes(key)) return city;
  return { code: 'BER', name: 'Berlin' };
}

/** The date (UTC, `YYYY-MM-DD`) of the next given weekday strictly after `now`. */
export function nextWeekday(now: number, weekday: number): string {
  const d = new Date(now);
  const ahead = (weekday - d.getUTCDay() + 7) % 7 || 7;
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + ahead))
    .toISOString()
    .slice(0, 10);
}

const pad = (n: number): string => String(n).padStart(2, '0');

/** Three deterministic offers for a route and date. */
export function offersFor(from: string, to: string, date: string): FlightOffer[] {
  const h = createHash('sha256').update(`${from}-${to}-${date}`).digest();
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

/** Builds the example's agents and tools. */
export function tripPlanner(options: ExampleOptions = {}): Example {
  const engine = createScriptedEngine({
    ...(options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs }),
    // The planner's prompt carries the facts as JSON; the script turns them into prose.
    script: (request: ChatRequest) => {
      const last = request.messages.at(-1)?.content ?? '';
      try {
        const f = JSON.parse(last) as { city: string; date: string; offer: FlightOffer };
        return (
          `Here is your plan for ${f.city}. Fly out on ${f.date} with ${f.offer.flight}, ` +
          `leaving ${f.offer.from} at ${f.offer.departs} and landing at ${f.offer.arrives}, ` +
          `for EUR ${f.offer.priceEur}. It is the cheapest of the morning options, ` +
          `and your calendar is free that day. Shall I book it?`
        );
      } catch {
        return null;
      }
    },
  });

  const searchFlights = defineTool({
    name: 'search_flights',
    description: 'Searches flights for a date. Returns offers sorted by price.',
    input: z.strictObject({
      to: z.string().regex(/^[A-Z]{3}$/, 'an IATA airport code such as BER'),
      date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD'),
      from: z
        .string()
        .regex(/^[A-Z]{3}$/)
        .default('LHR'),
    }),
    handler: ({ to, date, from }) =>
      offersFor(from, to, date).sort((a, b) => a.priceEur - b.priceEur),
  });

  const calendar = defineAgent({
    name: 'calendar',
    description: 'Resolves a day such as "next Tuesday" to a date and checks it is free.',
    handler: (input, ctx) => {
      const lower = input.message.toLowerCase();
      const weekday = WEEKDAYS.findIndex((d) => lower.includes(d));
      if (weekday < 0) return needsData('Which day should the trip start?');
      return { date: nextWeekday(ctx.clock.now(), weekday), free: true };
    },
  });

  const flights = defineAgent({
    name: 'flights',
    description: 'Finds the cheapest flight for a destination and date.',
    handler: async (input, ctx, runtime) => {
      const result = await runtime.callTool<FlightOffer[]>('search_flights', input.args ?? {}, ctx);
      if (result.status !== 'success' || !result.output)
        throw result.error ?? new Error('no flights found');
      const cheapest = result.output[0];
      if (!cheapest) return needsData('No flights on that date; try another day.');
      return cheapest;
    },
  });

  const planner = defineAgent({
    name: 'planner',
    description: 'Plans a trip: picks the date, finds a flight, writes the plan.',
    timeoutMs: 60_000,
    async *handler(input, ctx, runtime) {
      const city = destinationOf(input.message);
      const day = WEEKDAYS.find((d) => input.message.toLowerCase().includes(d)) ?? 'tuesday';
      yield { type: 'narration', text: `Checking the calendar for next ${day}` };
      const cal = await runtime.delegate<{ date: string }>('calendar', `next ${day}`, ctx);
      if (cal.status !== 'success' || !cal.output) return needsData('I could not find a free day.');
      const date = cal.output.date;
      yield { type: 'narration', text: `Searching flights to ${city.code} on ${date}` };
      const offer = await runtime.delegate<FlightOffer>(
        'flights',
        { message: city.name, args: { to: city.code, date } },
        ctx,
      );
      if (offer.status !== 'success' || !offer.output)
        return needsData(`No flight to ${city.name} found.`);
      const facts = JSON.stringify({ city: city.name, date, offer: offer.output });
      const summary = yield* chatTokens(
        engine,
        {
          messages: [
            {
              role: 'system',
              content: 'You are a travel planner. Summarise the plan in two sentences.',
            },
            { role: 'user', content: facts },
          ],
          params: { max_tokens: 96 },
          seed: options.seed ?? 42,
        },
        ctx,
      );
      return summary.text;
    },
  });

  return {
    name: 'trip-planner',
    description: 'planner delegates to calendar and flights; flights calls search_flights',
    entry: 'planner',
    input: 'Plan a trip to Berlin next Tuesday',
    agents: [planner, calendar, flights],
    tools: [searchFlights],
  };
}
