"""A training set's file names and labels in a few numpy arrays, never a Python object per file,
and the index file that saves them (--index FILE, `workbench index DIR`).

A DataLoader worker that reads a list of a million `Path` objects writes each one's reference
count, and so copies every page the list touches into its own memory (copy-on-access): with
millions of files and several workers, gigabytes. The same names in one byte buffer with an
offset array are read without writing to them: the workers keep sharing the parent's pages.

Listing a big folder is done once, with os.scandir in one pass and one sort; the index file
keeps the result (and the labels) for every rank and every restart to load in a second.

Example:
    >>> names = Strings.of(["cats/1.jpg", "dogs/é.png"])
    >>> len(names), names[1], names.data.dtype
    (2, 'dogs/é.png', dtype('uint8'))
"""
from pathlib import Path

import numpy as np

from .common import image_names

# The index file's format (an uncompressed .npz of plain arrays, loaded without pickle).
INDEX_FORMAT = 1


class Strings:
    """Strings held as one UTF-8 byte buffer (`data`, uint8) and where each starts (`offsets`,
    int64, one more than there are strings): string k is data[offsets[k]:offsets[k + 1]]."""

    def __init__(self, data, offsets):
        self.data, self.offsets = data, offsets

    @classmethod
    def of(cls, strings):
        """The strings of an iterable, in order."""
        encoded = [text.encode("utf-8") for text in strings]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), offsets)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, k):
        start, end = self.offsets[k], self.offsets[k + 1]
        return self.data[start:end].tobytes().decode("utf-8")

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def select(self, keep):
        """The strings at the positions `keep` (an index array), in that order."""
        return Strings.of(self[int(k)] for k in keep)


class FileTable:
    """The image files of a training folder `root`: their names relative to it (Strings, in the
    order the loaders read them), each one's label (int32: the index of its first-level
    sub-folder among `classes`, 0 directly in root: the ImageFolder layout). Indexing gives a
    file's Path, as a list of paths would (`table[i]`, `for path in table`).

    Example:
        >>> table = FileTable.listed("workbench/sample_data")
        >>> len(table), table.name(0), table[0].name, int(table.labels[0]), table.classes
        (12, 'astronaut.jpg', 'astronaut.jpg', 0, [])
    """

    def __init__(self, root, names, labels, classes):
        self.root, self.names, self.labels, self.classes = Path(root), names, labels, list(classes)

    @classmethod
    def of_names(cls, root, names):
        """The table of the files `names` (relative to root, posix), labelled by their folders."""
        names = list(names)
        folders = [name.split("/", 1)[0] if "/" in name else None for name in names]
        classes = sorted({folder for folder in folders if folder is not None})
        index = {folder: k for k, folder in enumerate(classes)}
        labels = np.array([index[folder] if folder is not None else 0 for folder in folders], dtype=np.int32)
        return cls(root, Strings.of(names), labels, classes)

    @classmethod
    def listed(cls, root):
        """Every image file under `root` (image_names: one os.scandir pass, sorted once)."""
        return cls.of_names(root, image_names(root))

    @classmethod
    def of_paths(cls, root, paths):
        """The table of the files `paths` under root (an annotated subset, in its order)."""
        return cls.of_names(root, [Path(path).relative_to(root).as_posix() for path in paths])

    def __len__(self):
        return len(self.names)

    def __getitem__(self, i):
        return self.root / self.names[i]

    def __iter__(self):
        return (self.root / name for name in self.names)

    def name(self, i):
        """File i's name relative to root (posix)."""
        return self.names[i]

    def select(self, keep):
        """The files at the positions `keep` (an index array), with their labels and every class."""
        keep = np.asarray(keep, dtype=np.int64)
        return FileTable(self.root, self.names.select(keep), self.labels[keep], self.classes)

    def save(self, path):
        """Write the table as an index file (`load` reads it back; the names stay relative, so the
        folder may move with it)."""
        classes = Strings.of(self.classes)
        with open(path, "wb") as file:  # (a file object: np.savez would add .npz to a name)
            np.savez(file, format=np.array(INDEX_FORMAT), names=self.names.data, offsets=self.names.offsets,
                     labels=self.labels, classes=classes.data, class_offsets=classes.offsets)
        return Path(path)

    @classmethod
    def load(cls, path, root):
        """The table an index file holds (see save), for the folder `root`; a ValueError says what
        is wrong with a file that is not such an index, or one made for another folder."""
        try:
            with np.load(path, allow_pickle=False) as arrays:
                if int(arrays["format"]) != INDEX_FORMAT:
                    raise ValueError(f"index format {int(arrays['format'])}, this loader reads {INDEX_FORMAT}")
                table = cls(root, Strings(arrays["names"], arrays["offsets"]), arrays["labels"],
                            list(Strings(arrays["classes"], arrays["class_offsets"])))
        except (OSError, KeyError, ValueError) as error:
            raise ValueError(f"--index {path}: not an index of image files ({error}); write one with "
                             f"`workbench index {root} -o {path}`") from None
        if len(table) and not table[0].is_file():
            raise ValueError(f"--index {path}: its first file {table.name(0)} is not under {root}: an index of "
                             f"another folder? Write this folder's with `workbench index {root} -o {path}`")
        return table


def training_files(root, index=None, paths=None):
    """The FileTable a training loader reads from the folder `root`: the files `paths` (an
    annotated subset) when given, else those of the index file `index`, else the folder listed."""
    if paths is not None:
        return FileTable.of_paths(root, paths)
    return FileTable.load(index, root) if index is not None else FileTable.listed(root)
