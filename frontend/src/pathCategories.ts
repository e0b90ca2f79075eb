// The seven categories of critical-path time (docs/metrics.md, Critical path), in the
// report's order, each defined in one line; one colour each, shared by the Critical path
// page and the timeline's highlight.
export const CP_CATEGORIES: [string, string][] = [
  ["cpu", "host time in operators and runtime calls that are not one of the host categories below"],
  ["gpu_compute", "kernels, copies and memsets running on a stream (collective kernels excepted)"],
  ["launch_overhead", "from a launch call's start to its op's start, when the stream was idle"],
  ["kernel_to_kernel", "the gap between two ops on one stream when the next was already queued"],
  ["sync", "host synchronisation calls (cuda*Synchronize, cudaEventQuery, cudaStreamWaitEvent)"],
  ["communication", "collective kernels and host collective ranges (nccl:*, gloo:*, record_param_comms)"],
  ["data_loading", "host time inside a DataLoader range on the thread"],
];
export const CP_COLORS: Record<string, string> = {
  cpu: "#4e79a7", gpu_compute: "#59a14f", launch_overhead: "#f28e2b", kernel_to_kernel: "#e15759",
  sync: "#b07aa1", communication: "#76b7b2", data_loading: "#edc948",
};
