# Megatron-LM (core_r0.13) settings for HyperPipe's plan of ../models/tiny-gpt.yaml on ../clusters/cpu-emulated.yaml
# dp 1 (world size 3 = tp × pp × dp); ranks placed by rankfile or torchrun.txt
HYPERPIPE_MEGATRON_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 3
  --pipeline-model-parallel-layout "E,t*4|t*2|L"
  --num-layers 6
  --seq-length 64
  --micro-batch-size 4
  --global-batch-size 32
)
