"""What the Apache Beam pipelines share: choosing the runner and its options,
naming it in messages, running to the end, and the error of a runner that
lost elements.

Runners: DirectRunner (in process, or `--direct_running_mode=multi_processing
--direct_num_workers=N` in the options), DaskRunner (`dask_address`: a
`dask.distributed` scheduler; empty: a new local cluster), and any other
Beam runner by name (Dataflow, Flink, Spark, ...).
"""

import shlex


class DataLossError(RuntimeError):
    """A runner lost or repeated elements: a stage passed on other than what it got."""


def pipeline_options(runner, beam_pipeline_options="", dask_address=""):
    """(runner, options) for `beam.Pipeline`; `beam_pipeline_options`: more
    options as one command-line string."""
    from apache_beam.options.pipeline_options import PipelineOptions

    args = shlex.split(beam_pipeline_options)
    if runner not in ("DaskRunner", "apache_beam.runners.dask.dask_runner.DaskRunner"):
        if dask_address:
            raise ValueError(f"--dask_address is for --runner=DaskRunner, not {runner}.")
        return runner, PipelineOptions(args + [f"--runner={runner}"])
    try:
        from apache_beam.runners.dask.dask_runner import DaskRunner
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ImportError("--runner=DaskRunner needs dask.distributed: "
                          "pip install \"dask[distributed]\".") from None
    if dask_address:
        args.append(f"--dask_client_address={dask_address}")
    if not any(a.startswith(("--dask_npartitions", "--dask_partition_size")) for a in args):
        # One file per Dask partition (Beam's default puts 128 files in one), so the files
        # are read on all workers: the DaskRunner treats Reshuffle as a no-op.
        args.append("--dask_partition_size=1")
    # Beam 2.77's PipelineOptions refuses the short name "DaskRunner": pass the runner itself.
    return DaskRunner(), PipelineOptions(args)


def runner_label(runner, options):
    """"DaskRunner at tcp://...", "DirectRunner, multi_processing x 2", ... for messages."""
    name = runner.rsplit(".", 1)[-1]
    found = options.get_all_options()
    if name == "DaskRunner":
        return f"{name} at {found.get('address') or 'a new local cluster'}"
    if name in ("DirectRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner"):
        mode = found.get("direct_running_mode") or "in_memory"
        if mode != "in_memory":
            return f"{name}, {mode} x {found.get('direct_num_workers') or 1}"
    return name


def run_to_completion(pipeline):
    """Runs `pipeline` and waits for it; the DaskRunner's client, which the
    runner leaves open, is closed either way."""
    result = pipeline.run()
    try:
        result.wait_until_finish()
    finally:
        client = getattr(result, "client", None)
        if client is not None:
            client.close()
    return result
