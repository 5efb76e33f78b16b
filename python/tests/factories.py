"""One constructor per filter type (and layout), for tests parametrized over all of them."""
import bloomkit


def make(kind, n, p=0.01, seed=0, keys=None):
    """A filter of `kind` for n keys; the static ones (Fuse, Ribbon) are built from `keys`."""
    if kind == "bloom":
        return bloomkit.Bloom(n, p, seed=seed)
    if kind == "partitioned":
        return bloomkit.Bloom(n, p, layout="partitioned", seed=seed)
    if kind == "blocked":
        return bloomkit.Blocked(n, p, seed=seed)
    if kind == "blocked512":
        return bloomkit.Blocked(n, p, block_bits=512, seed=seed)
    if kind == "counting":
        return bloomkit.Counting(n, p, seed=seed)
    if kind == "scalable":
        return bloomkit.Scalable(max(n // 16, 1), p, seed=seed)
    if kind == "cuckoo":
        return bloomkit.Cuckoo(n, p, seed=seed)
    if kind == "fuse":
        return bloomkit.Fuse(keys if keys is not None else [], seed=seed)
    if kind == "ribbon":
        return bloomkit.Ribbon(keys if keys is not None else [], p, seed=seed)
    raise ValueError(kind)


MUTABLE = ["bloom", "partitioned", "blocked", "blocked512", "counting", "scalable", "cuckoo"]
# Built once from all keys: no add.
STATIC = ["fuse", "ribbon"]
ALL = MUTABLE + STATIC
# The CLI's --type names and options for the same filters.
CLI_TYPE = {
    "bloom": ["--type", "bloom"],
    "partitioned": ["--type", "partitioned"],
    "blocked": ["--type", "blocked"],
    "blocked512": ["--type", "blocked", "--block-bits", "512"],
    "counting": ["--type", "counting"],
    "scalable": ["--type", "scalable"],
    "cuckoo": ["--type", "cuckoo"],
    "fuse": ["--type", "fuse"],
    "ribbon": ["--type", "ribbon"],
}
