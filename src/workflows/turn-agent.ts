/**
 * @module A role's turn as an agent: each role of a workflow is registered on the runtime as
 * the agent `workflow.<workflow>.<role>`, and a turn is a step of the thread's run that
 * invokes it. The step's input holds the thread so far, so the turn is durable (it runs again
 * the same after a restart) and its model calls are the run's (recorded, replayed). A role
 * over a model or a CLI adapter streams its tokens into the turn's step as they come.
 */
import { defineAgent } from '../actors/define-agent.js';
import type { AgentDefinition } from '../actors/agent-runtime.js';
import type { StepPlacement } from '../steps/submission-host.js';
import type { WorkflowDefinition } from './workflow-definition.js';
import {
  turnAgentName,
  turnHandler,
  type RolePlacement,
  type WorkflowRoleSpec,
} from './workflow-roles.js';

export { isTurnAgent, turnAgentName, type TurnOutput, type TurnThread } from './workflow-roles.js';

/**
 * The agents of `workflow`'s roles, for `runtime.registerAgent`: what a runtime that runs
 * its turns needs — the engine's, and each replica of a pool its roles are placed on
 * (`FleetWorker.start({ runtime: { agents: workflowAgents(w) } })`). A role placed on
 * `'worker'` is an agent of the worker pool, whose threads import the workflow from its
 * `module` and `export`.
 */
export function workflowAgents(workflow: WorkflowDefinition): AgentDefinition[] {
  return workflow.roleNames.map((role) => {
    const spec = workflow.roles[role] as WorkflowRoleSpec;
    const name = turnAgentName(workflow.name, role);
    const description = `the ${role} role of workflow ${workflow.name}`;
    if (spec.placement === 'worker') {
      return defineAgent({
        name,
        description,
        placement: 'worker',
        module: workflow.module as string,
        export: workflow.export as string,
      });
    }
    return defineAgent({ name, description, handler: turnHandler(spec) });
  });
}

/** Where the step of a turn of a role placed at `placement` is submitted. */
export function turnPlacement(placement: RolePlacement | undefined): StepPlacement {
  return typeof placement === 'object' ? { pool: placement.pool } : 'here';
}
