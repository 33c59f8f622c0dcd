"""The order in which the Kornia and Albumentations training loaders read their samples: a
function of (seed, epoch, rank) alone, so that a job stopped at (epoch, batch) can start again
there with the batches, and the draws, it would have had (--resume EPOCH:BATCH).

DataLoader's RandomSampler draws each epoch's order from one generator that runs on across
epochs: epoch 5's order exists only after epochs 0 to 4 were drawn. Here each epoch's order is
drawn afresh from (seed, epoch), as DistributedSampler draws it, and each item carries its epoch
and batch number, from which a loader seeds that batch's augmentation.
"""
import torch
from torch.utils.data import Sampler

from .common import derive_seed


class EpochSampler(Sampler):
    """Each epoch, a permutation of `size` samples drawn from (seed, epoch); under torchrun this
    rank's 1/world_size of it, padded with repeated samples as DistributedSampler pads, so that
    every rank has as many (and as many batches). set_epoch(epoch, start_batch) moves to an epoch
    and, for a resumed one, to its batch `start_batch`. Items are (index, epoch, batch), the batch
    numbered within the epoch for `batch_size`. `num_samples`: that many draws with replacement
    instead, from (seed, epoch, rank) (benchmarks on small folders).

    Example:
        >>> sampler = EpochSampler(10, batch_size=4, seed=0)
        >>> whole = list(sampler)
        >>> sampler.set_epoch(0, start_batch=1)
        >>> list(sampler) == whole[4:], whole[4][1:]
        (True, (0, 1))
    """

    def __init__(self, size, batch_size, seed, rank=0, world_size=1, num_samples=None):
        # `size` may be the dataset: its length is then read at each epoch (a dataset whose files
        # are swapped, as the estimate swaps them, is sampled as it stands).
        self.source, self.batch_size, self.seed = size, batch_size, seed
        self.rank, self.world_size, self.num_samples = rank, world_size, num_samples
        self.epoch, self.start_batch = 0, 0

    def set_epoch(self, epoch, start_batch=0):
        """Read epoch `epoch` next, from its batch `start_batch` on."""
        self.epoch, self.start_batch = epoch, start_batch

    @property
    def size(self):
        """How many samples there are to draw from."""
        return self.source if isinstance(self.source, int) else len(self.source)

    def order(self):
        """This rank's samples of the current epoch, in order, before start_batch is applied."""
        if self.num_samples is not None:
            generator = torch.Generator().manual_seed(derive_seed(self.seed, self.epoch, self.rank))
            return torch.randint(self.size, (self.num_samples,), generator=generator).tolist()
        generator = torch.Generator().manual_seed(derive_seed(self.seed, self.epoch))
        order = torch.randperm(self.size, generator=generator).tolist()
        per_rank = -(-self.size // self.world_size)
        padded = (order * (-(-per_rank * self.world_size // self.size)))[:per_rank * self.world_size]
        return padded[self.rank::self.world_size]

    def __iter__(self):
        first = self.start_batch * self.batch_size
        for position, index in enumerate(self.order()[first:], start=first):
            yield index, self.epoch, position // self.batch_size

    def __len__(self):
        count = self.num_samples if self.num_samples is not None else -(-self.size // self.world_size)
        return max(0, count - self.start_batch * self.batch_size)


def sample_index(item):
    """The dataset index of a sampler item: (index, epoch, batch) from EpochSampler, or an int."""
    return item[0] if isinstance(item, tuple) else item
