/**
 * The fleet under faults on one Redis with its records in PostgreSQL (the suite:
 * fleet-faults.suite.ts): budgets, cancels, lost steps and fencing hold as with the records
 * in Redis.
 */
import { describeFleetFaults } from './fleet-faults.suite.js';

describeFleetFaults({ cluster: false, postgres: true });
