/**
 * The fleet under faults on a Redis Cluster of three masters (the suite: fleet-faults.suite.ts):
 * budgets, cancels, lost steps and fencing hold there as on one Redis.
 */
import { describeFleetFaults } from './fleet-faults.suite.js';

describeFleetFaults({ cluster: true });
