"""`import hyperpipe`: the planning commands from Python, checked against the CLI."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import hyperpipe

HYPERPIPE = os.environ["HYPERPIPE_BINARY"]
EXAMPLES = os.environ["HYPERPIPE_EXAMPLES"]
TINY_PLAN = os.path.join(EXAMPLES, "plans", "tiny-gpt-3stage.json")


def cli_json(*args):
    """The CLI's --format json document for the same command."""
    out = subprocess.run([HYPERPIPE, *args, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


class Module(unittest.TestCase):
    def test_version_and_catalogues(self):
        self.assertTrue(hyperpipe.__version__)
        names = [m["name"] for m in hyperpipe.models()["models"]]
        self.assertIn("gpt3-2.7b", names)
        self.assertEqual(hyperpipe.devices(), cli_json("devices"))

    def test_plan_is_the_clis_plan(self):
        result = hyperpipe.plan("gpt3-2.7b", "a100-v100-t4", 64, runtime="megatron")
        self.assertEqual(result["plan"]["runtime"], "megatron")
        expected = cli_json("plan", "--model", "gpt3-2.7b", "--cluster", "a100-v100-t4",
                            "--global-batch", "64", "--runtime", "megatron")
        self.assertEqual(result["plan"]["stages"], expected["plan"]["stages"])
        self.assertAlmostEqual(result["report"]["iteration_time_s"],
                               expected["report"]["iteration_time_s"])

    def test_plan_with_the_shape_fixed(self):
        result = hyperpipe.plan("gpt3-2.7b", "a100-v100-t4", 64, pp=4, dp=4, recompute="full")
        expected = cli_json("plan", "--model", "gpt3-2.7b", "--cluster", "a100-v100-t4",
                            "--global-batch", "64", "--pp", "4", "--dp", "4",
                            "--recompute", "full")
        self.assertEqual(result["plan"]["stages"], expected["plan"]["stages"])
        for stage in result["plan"]["stages"]:
            self.assertEqual(stage["dp"], 4)
            self.assertEqual(stage["recompute"], "full")

    def test_simulate_a_dict_or_a_file(self):
        from_file = hyperpipe.simulate(TINY_PLAN)
        with open(TINY_PLAN) as f:
            doc = json.load(f)
        # A dict's relative references are resolved from here: make them absolute.
        for key in ("model", "cluster"):
            doc[key] = os.path.normpath(os.path.join(os.path.dirname(TINY_PLAN), doc[key]))
        from_dict = hyperpipe.simulate(doc)
        self.assertEqual(from_file["iteration_time_s"], from_dict["iteration_time_s"])
        blocking = hyperpipe.simulate(TINY_PLAN, runtime="deepspeed")
        self.assertGreater(blocking["iteration_time_s"], from_file["iteration_time_s"])

    def test_export_returns_the_files(self):
        files = hyperpipe.export(TINY_PLAN, to="megatron")
        self.assertEqual(sorted(files), ["megatron-args.sh", "rankfile", "torchrun.txt"])
        self.assertIn('--pipeline-model-parallel-layout "E,t*4|t*2|L"', files["megatron-args.sh"])

    def test_describe_a_hugging_face_config_dict(self):
        config = {"_name_or_path": "org/tiny-llama", "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
                  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
                  "vocab_size": 1000, "max_position_embeddings": 128}
        report = hyperpipe.describe(config, "a100x8")
        self.assertEqual(report["model"]["blocks"], 2)
        self.assertEqual(report["model"]["kv_heads"], 2)
        self.assertEqual(report["model"]["name"], "org/tiny-llama")  # as the CLI names it

    def test_bad_input_raises_the_clis_message(self):
        with self.assertRaises(hyperpipe.InputError) as raised:
            hyperpipe.simulate(os.path.join(EXAMPLES, "plans", "gpt3-2.7b-4stage.json"),
                               runtime="megatron")
        self.assertIn("Megatron-LM recomputes alike on every stage", str(raised.exception))
        self.assertIsInstance(raised.exception, ValueError)
        with self.assertRaises(hyperpipe.InputError):
            hyperpipe.plan("no-such-model", "a100x8", 8)
        with self.assertRaises(hyperpipe.InputError):
            hyperpipe.simulate(42)

    def test_a_dict_is_named_as_passed_not_by_a_temporary_file(self):
        interleaved = hyperpipe.plan("gpt3-2.7b", "a100-v100-t4", 64, runtime="megatron")["plan"]
        self.assertEqual(interleaved["schedule"]["kind"], "interleaved")
        with self.assertRaises(hyperpipe.InputError) as raised:
            hyperpipe.simulate(interleaved, runtime="deepspeed")
        self.assertIn("the plan dict", str(raised.exception))
        self.assertNotIn("hyperpipe-py-", str(raised.exception))
        with self.assertRaises(hyperpipe.InputError) as raised:
            hyperpipe.describe({"model_type": "llama", "hidden_size": 256}, "a100x8")
        self.assertIn("the model dict", str(raised.exception))
        self.assertNotIn("hyperpipe-py-", str(raised.exception))

    def test_every_keyword_reaches_a_flag_the_command_takes(self):
        """The module names each command's flags again: one renamed in the command alone is
        refused here (an unknown flag is bad input), and a keyword added to the module
        without a call here fails the signature check."""
        def keywords(function):
            signature = function.__doc__.splitlines()[0]
            return set(re.findall(r"(\w+): ", signature))

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as profiles:
            json.dump({"format": "hyperpipe.profiles/1", "host": "test", "entries": []}, profiles)
        try:
            searched = dict(runtime="hyperpipe", micro_batch=2, schedules=["1f1b"], max_stages=4,
                            max_tp=2, same_dp=True, sequence_parallel=True, seq=512, tp=2, pp=2,
                            dp=2, recompute="selective", dtype="bf16")
            self.assertIn("plan", hyperpipe.plan("gpt2", "a100x8", 16, **searched))
            baseline = dict(baseline="uniform", profiles=profiles.name)
            self.assertIn("plan", hyperpipe.plan("gpt2", "a100x8", 16, **baseline))
            self.assertEqual(keywords(hyperpipe.plan),
                             {"model", "cluster", "global_batch", *searched, *baseline})
            described = dict(micro_batch=2, seq=512, tp=2, recompute="full")
            self.assertIn("model", hyperpipe.describe("gpt2", "a100x8", **described))
            self.assertEqual(keywords(hyperpipe.describe), {"model", "cluster", *described})
            simulated = dict(runtime="megatron", p2p="blocking", cluster="cpu-emulated",
                             profiles=profiles.name)
            self.assertIn("iteration_time_s", hyperpipe.simulate(TINY_PLAN, **simulated))
            self.assertEqual(keywords(hyperpipe.simulate), {"plan", *simulated})
        finally:
            os.unlink(profiles.name)


if __name__ == "__main__":
    unittest.main()
