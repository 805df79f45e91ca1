/**
 * @module The trip-planner example: `planner` delegates to `calendar` and `flights`;
 * `flights` calls the tool `search_flights`; `planner` streams its plan from the scripted
 * engine.
 */
import { z } from 'zod';
import { defineAgent } from '../../src/actors/define-agent.js';
import { needsData } from '../../src/actors/agent-result.js';
import { chatTokens } from '../../src/engines/chat-tokens.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { seedOf, type Example, type ExampleOptions } from '../example.js';
import { describeChoice, offersFor, type FlightChoice, type FlightOffer } from './flight-offers.js';

export {
  dayPeriod,
  describeChoice,
  offersFor,
  type DayPeriod,
  type FlightChoice,
  type FlightOffer,
} from './flight-offers.js';

/** The facts the planner gives the engine, as JSON, to write the plan from. */
interface PlanFacts {
  readonly city: string;
  readonly date: string;
  readonly free: boolean;
  readonly choice: FlightChoice;
}

const CITIES: Record<string, { readonly code: string; readonly name: string }> = {
  berlin: { code: 'BER', name: 'Berlin' },
  paris: { code: 'CDG', name: 'Paris' },
  tokyo: { code: 'HND', name: 'Tokyo' },
  lisbon: { code: 'LIS', name: 'Lisbon' },
  rome: { code: 'FCO', name: 'Rome' },
};
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

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

/** Builds the example's agents and tools. */
export function tripPlanner(options: ExampleOptions = {}): Example {
  const engine = createScriptedEngine({
    ...(options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs }),
    ...(options.priceTable === undefined ? {} : { priceTable: options.priceTable }),
    // The planner's prompt carries the facts as JSON; the script turns them into prose.
    script: (request: ChatRequest) => {
      const last = request.messages.at(-1)?.content ?? '';
      let f: PlanFacts;
      try {
        f = JSON.parse(last) as PlanFacts;
      } catch {
        return null;
      }
      const { offer } = f.choice;
      // Every claim comes from the facts: rank and part of day from the offers themselves.
      return (
        `Here is your plan for ${f.city}. Fly out on ${f.date} with ${offer.flight}, ` +
        `leaving ${offer.from} at ${offer.departs} and landing at ${offer.arrives}, ` +
        `for EUR ${offer.priceEur}. It is ${describeChoice(f.choice)}, ` +
        `and your calendar is ${f.free ? 'free' : 'not free'} that day. Shall I book it?`
      );
    },
  });

  const searchFlights = defineTool({
    name: 'search_flights',
    description:
      "Searches flights for a date. Returns offers sorted by price; the run's seed decides them.",
    input: z.strictObject({
      to: z.string().regex(/^[A-Z]{3}$/, 'an IATA airport code such as BER'),
      date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD'),
      from: z
        .string()
        .regex(/^[A-Z]{3}$/)
        .default('LHR'),
    }),
    handler: ({ to, date, from }, ctx) =>
      offersFor(from, to, date, seedOf(ctx)).sort((a, b) => a.priceEur - b.priceEur),
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
      const offers = result.output;
      // Cheapest by its own reckoning, whatever order the tool answers in.
      const cheapest = [...offers].sort((a, b) => a.priceEur - b.priceEur)[0];
      if (!cheapest) return needsData('No flights on that date; try another day.');
      const choice: FlightChoice = { offer: cheapest, offers };
      return choice;
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
      const cal = await runtime.delegate<{ date: string; free: boolean }>(
        'calendar',
        `next ${day}`,
        ctx,
      );
      if (cal.status !== 'success' || !cal.output) return needsData('I could not find a free day.');
      const { date, free } = cal.output;
      yield { type: 'narration', text: `Searching flights to ${city.code} on ${date}` };
      const flight = await runtime.delegate<FlightChoice>(
        'flights',
        { message: city.name, args: { to: city.code, date } },
        ctx,
      );
      if (flight.status !== 'success' || !flight.output)
        return needsData(`No flight to ${city.name} found.`);
      const facts: PlanFacts = { city: city.name, date, free, choice: flight.output };
      const summary = yield* chatTokens(
        engine,
        {
          messages: [
            {
              role: 'system',
              content: 'You are a travel planner. Summarise the plan in two sentences.',
            },
            { role: 'user', content: JSON.stringify(facts) },
          ],
          params: { max_tokens: 96 },
          seed: seedOf(ctx),
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
    routes: [{ pattern: /\b(trip|travel|fly|flights?|holiday)\b/i, handler: 'planner' }],
    input: 'Plan a trip to Berlin next Tuesday',
    agents: [planner, calendar, flights],
    tools: [searchFlights],
  };
}
