"""NVIDIA GPUs and MIG: the GPU catalog (``gpus``) and MIG placement rules (``mig``) —
facts any layer above may use — then the GPU Operator's mig-parted config
(``migparted``), layout diagrams (``mig_svg``), the MIG builder and its lint rules
(GEN1xx)."""
