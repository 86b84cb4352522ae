"""The doc-block runner on small pages: what it runs, where, and what it reports."""
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
RUNNER = HERE / "run_doc_blocks.py"
SOURCE = HERE.parent.parent
FENCE = "```"


class RunDocBlocks(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.build = pathlib.Path(self.folder.name) / "build"
        self.build.mkdir()
        # A stand-in `hyperpipe` on the build folder's PATH entry.
        tool = self.build / "hyperpipe"
        tool.write_text("#!/bin/sh\necho \"hyperpipe $*\"\n")
        tool.chmod(0o755)

    def tearDown(self):
        self.folder.cleanup()

    def run_page(self, text):
        page = pathlib.Path(self.folder.name) / "page.md"
        page.write_text(text)
        return subprocess.run([sys.executable, str(RUNNER), "--source", str(SOURCE), "--build",
                               str(self.build), str(page)], capture_output=True, text=True,
                              timeout=60)

    def test_blocks_run_in_order_in_one_folder_that_looks_like_the_repository(self):
        result = self.run_page(f"""# A page
{FENCE}sh
test -d out && test -f examples/models/tiny-gpt.yaml && test -x build/hyperpipe
hyperpipe plan --global-batch 8 > out/first.txt
{FENCE}

{FENCE}python
import pathlib
assert pathlib.Path("out/first.txt").read_text() == "hyperpipe plan --global-batch 8\\n"
{FENCE}

{FENCE}
plain output, never run: exit 1
{FENCE}
""")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("page.md: 2 block(s) ran, 0 marked no-run", result.stdout)

    def test_a_failing_block_is_named_by_its_line_with_its_output(self):
        result = self.run_page(f"""Intro.

{FENCE}sh
echo fine
{FENCE}

{FENCE}sh
echo about to fail
false
echo never
{FENCE}
""")
        self.assertEqual(result.returncode, 1)
        self.assertIn("about to fail", result.stdout)
        self.assertNotIn("never\n", result.stdout.split("failed")[0])
        self.assertIn("page.md:7: this sh block failed (exit code 1)", result.stdout)

    def test_a_failure_inside_a_pipe_fails_the_block(self):
        result = self.run_page(f"{FENCE}sh\nfalse | cat\n{FENCE}\n")
        self.assertEqual(result.returncode, 1, result.stdout)

    def test_no_run_needs_a_reason(self):
        marked = self.run_page(f"{FENCE}sh no-run (needs a GPU)\nfalse\n{FENCE}\n")
        self.assertEqual(marked.returncode, 0, marked.stdout + marked.stderr)
        self.assertIn("page.md:1: not run: needs a GPU", marked.stdout)
        bare = self.run_page(f"{FENCE}sh no-run\nfalse\n{FENCE}\n")
        self.assertEqual(bare.returncode, 2)
        self.assertIn("'no-run (why)'", bare.stderr)

    def test_an_unclosed_block_is_refused(self):
        result = self.run_page(f"{FENCE}sh\necho open\n")
        self.assertEqual(result.returncode, 2)
        self.assertIn("never closed", result.stderr)

    def test_what_a_block_leaves_running_ends_with_it(self):
        marker = pathlib.Path(self.folder.name) / "still-running"
        result = self.run_page(f"{FENCE}sh\n(sleep 3; touch {marker}) &\necho started\n{FENCE}\n")
        self.assertEqual(result.returncode, 0, result.stdout)
        subprocess.run(["sleep", "4"], check=True)
        self.assertFalse(marker.exists())

    def test_links_must_lead_to_a_file_and_a_heading(self):
        page = pathlib.Path(self.folder.name) / "page.md"
        good = self.run_page("# Top\n\n## Planning for Megatron-LM, DeepSpeed\n\n"
                             "[here](#planning-for-megatron-lm-deepspeed) "
                             f"[web](https://example.org/x) [file]({page.name}#top)\n")
        self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
        missing = self.run_page("[gone](no-such-page.md)\n")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("broken link, line 1: no-such-page.md (no such file", missing.stdout)
        anchor = self.run_page("# Top\n\n[there](#bottom)\n")
        self.assertEqual(anchor.returncode, 1)
        self.assertIn("(no heading makes #bottom)", anchor.stdout)


if __name__ == "__main__":
    unittest.main()
