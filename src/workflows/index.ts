/** Every workflow Steward registers; the bundle's entry point. */
export { evalSet } from './eval-set';
export { evalTask } from './eval-task';
export { sampleWorkflow } from './sample';
