/** The fleet under faults on one Redis (the suite: fleet-faults.suite.ts). */
import { describeFleetFaults } from './fleet-faults.suite.js';

describeFleetFaults({ cluster: false });
