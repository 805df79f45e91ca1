/**
 * @module `axon new <name>` and `axon generate <kind> <name>` (issue 48): their arguments,
 * help and actions. The actions (`new-project.ts`, `generate-item.ts`) and the examples a
 * generated name is checked against are imported when the command runs.
 */
import type { Command } from 'commander';
import { commandAction, type CommandContext } from '../command-context.js';

const NEW_AFTER = `
Writes <name>/ (a scoped @scope/<name> too): package.json depending on axon, tsconfig.json,
axon.yaml, README.md, .gitignore, the agent assistant (it calls the tool search_notes and
delegates to the agent researcher) and its test. Then: cd <name>; npm install && npm start
serves the HTTP API on 127.0.0.1:7070; npm test runs the tests on the scripted engine.
The name must be one npm takes for a new package; the folder must be missing or empty.
Either refused: exit 2, nothing written.
`;

const GENERATE_AFTER = `
Run inside a project axon new made (a package.json depending on axon, with axon.yaml
beside it; here or above). Writes src/<kind>s/<name>.ts and test/<kind>s/<name>.test.ts,
and names ./dist/<kind>s/<name>.js under code.<kind>s in axon.yaml, which npm start builds
and serves. <name>: lower-case words joined by "-" (order-status; a tool is registered as
order_status). Refused (exit 2, nothing written): another kind, a bad name, a name the
project has or axon serve registers already, a folder outside an axon project.

Examples:
  axon generate agent triage
  axon generate tool order-status
  axon generate workflow review
`;

/** Adds `axon new <name>` to `program`. */
export function registerNewCommand(program: Command, ctx: CommandContext): void {
  const command = program
    .command('new')
    .description('Make a project to start from: an agent, a tool, their test and axon.yaml')
    .argument('<name>', 'The package name; the project is made in the folder of that name')
    .addHelpText('after', NEW_AFTER);
  command.action(
    commandAction(ctx, command, async () => {
      const { newProject } = await import('./new-project.js');
      return newProject({ name: command.processedArgs[0] as string, cwd: ctx.cwd }, ctx.io);
    }),
  );
}

/** The names axon serve registers by default (the examples'), by kind, with their example. */
async function servedNames(): Promise<
  Record<'agent' | 'tool' | 'workflow', ReadonlyMap<string, string>>
> {
  const { exampleNames } = await import('../serve/served-examples.js');
  const names = await exampleNames();
  // A workflow of the project named like the example replaces it (served-workflows.ts).
  return { agent: names.agents, tool: names.tools, workflow: new Map() };
}

/** Adds `axon generate <kind> <name>` to `program`. */
export function registerGenerateCommand(program: Command, ctx: CommandContext): void {
  const command = program
    .command('generate')
    .description("Add an agent, a tool or a workflow, with its test, to axon new's project")
    .argument('<kind>', 'agent, tool or workflow')
    .argument('<name>', 'Its name: lower-case words joined by "-"')
    .addHelpText('after', GENERATE_AFTER);
  command.action(
    commandAction(ctx, command, async () => {
      const [kind, name] = command.processedArgs as [string, string];
      const { generateItem } = await import('./generate-item.js');
      return generateItem({ kind, name, cwd: ctx.cwd, served: await servedNames() }, ctx.io);
    }),
  );
}
