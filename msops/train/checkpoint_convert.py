"""MindSpore 2.6+'s names for offline resharding (`mindspore.parallel.checkpoint_convert`):
convert_checkpoints, rank_list_for_convert, convert_checkpoint_by_rank.

They are transform_checkpoints, rank_list_for_transform and transform_checkpoint_by_rank
under their newer names, with the same arguments; the work is theirs (transform.py,
transform_rank.py), only the errors name these functions.
"""
from __future__ import annotations

from typing import Mapping

from msops.train.transform import reshard_folder
from msops.train.transform_rank import needed_ranks, reshard_rank

__all__ = ["convert_checkpoints", "rank_list_for_convert", "convert_checkpoint_by_rank"]


def convert_checkpoints(src_checkpoints_dir: str, dst_checkpoints_dir: str, ckpt_prefix: str,
                        src_strategy_file: str | None = None,
                        dst_strategy_file: str | None = None, process_num: int = 1,
                        output_format: str = "safetensors") -> None:
    """Reshard `src_checkpoints_dir/rank_<i>/` (one checkpoint per rank, saved under
    `src_strategy_file`; None: whole) into `dst_checkpoints_dir/rank_<k>/
    <ckpt_prefix><k>.<output_format>` under `dst_strategy_file` (None: one whole file),
    `process_num` files written at once. As transform_checkpoints."""
    reshard_folder("convert_checkpoints", src_checkpoints_dir, dst_checkpoints_dir,
                   ckpt_prefix, src_strategy_file, dst_strategy_file, process_num,
                   output_format)


def rank_list_for_convert(rank_id: int, src_strategy_file: str | None = None,
                          dst_strategy_file: str | None = None) -> list[int]:
    """The source ranks whose checkpoints hold every piece of destination rank `rank_id`'s
    slices. As rank_list_for_transform."""
    return needed_ranks("rank_list_for_convert", rank_id, src_strategy_file,
                        dst_strategy_file)


def convert_checkpoint_by_rank(rank_id: int, checkpoint_files_map: Mapping[int, str],
                               save_checkpoint_file_name: str,
                               src_strategy_file: str | None = None,
                               dst_strategy_file: str | None = None) -> None:
    """Write destination rank `rank_id`'s checkpoint from the source files in
    `checkpoint_files_map` (source rank -> file). As transform_checkpoint_by_rank."""
    reshard_rank("convert_checkpoint_by_rank", rank_id, checkpoint_files_map,
                 save_checkpoint_file_name, src_strategy_file, dst_strategy_file)
