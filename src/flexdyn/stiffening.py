"""Geometric stiffening: Damaren & Sharf's consistent (CL) and exact (EE) body models.

Both keep every inertial term of the full model (the inconsistent model I of Damaren &
Sharf) and add to its linear elastic force ``K η`` the geometric elastic nonlinearities of
Sec 2.3.1, from the body's stiffening tensors ``K1`` (m, m, m) and ``K2`` (m, m, m, m)
(:attr:`flexdyn.body.Body.K1`; for beams :func:`flexdyn.beam.geometric_stiffness`):

* ``"exact"`` (EE): the whole force of Eq 20, ``Ŝ = (K0 + K1(η)/2! + K2(η, η)/3!) η``, the
  gradient of the strain energy ``U = ½ ηᵀK0η + K1·η³/3! + K2·η⁴/4!``: the model is
  Lagrangian and conserves energy;
* ``"consistent"`` (CL): only the first-order geometric stiffness under the constant-axial-
  load assumption — the axial load follows the stretch modes
  (:attr:`~flexdyn.body.Body.axial_modes`) linearly and stiffens the other modes,
  ``Ŝ_i = (K0 η)_i + ½ K1_ijk η_j η_k`` for every mode ``i`` that is not a stretch mode,
  ``(K0 η)_i`` for the stretch modes.  With modes that are either stretch or transverse (a
  straight beam's), the rows kept are exactly the terms
  with one stretch coordinate: the transverse stiffness changes with the axial load, but
  the stretch modes do not feel the foreshortening.  The force is not the gradient of an
  energy; :meth:`ConsistentBodyModel.strain_energy` reports ``½ ηᵀK0η + K1·η³/3!``, and the
  energy balance of a CL run shows the loss Damaren & Sharf report (Table 1).

A body without stiffening tensors (rigid bodies, modal bodies from data without them) gets
exactly the full model's terms in both.
"""

from __future__ import annotations

import numpy as np

from .body import BodyModel

__all__ = ["ConsistentBodyModel", "ExactBodyModel", "StiffenedBodyModel"]


class StiffenedBodyModel(BodyModel):
    """The full body model plus a geometric elastic force (subclasses say which)."""

    def __init__(self, model, i: int):
        super().__init__(model, i)
        body = self.body
        self.K1, self.K2 = body.K1, body.K2
        #: 1.0 for the rows of the modes the geometric force acts on
        self.rows = np.ones(body.n_modes)

    def geometric_force(self, eta: np.ndarray) -> np.ndarray:
        """The geometric part of the elastic force (m,) (Eq 20 less ``K0 η``)."""
        raise NotImplementedError

    def elastic_force(self, eta: np.ndarray, eta_dot: np.ndarray) -> np.ndarray:
        """``Ŝ(η) + C η̇`` (m,): Eq 20 with damping."""
        force = super().elastic_force(eta, eta_dot)
        if self.K1 is None:
            return force
        return force + self.geometric_force(eta)


class ExactBodyModel(StiffenedBodyModel):
    """Damaren & Sharf's exact model EE: every inertial term and the elastic force of Eq 20,
    the gradient of the strain energy :meth:`strain_energy`."""

    def geometric_force(self, eta: np.ndarray) -> np.ndarray:
        """``K1(η) η / 2 + K2(η, η) η / 6`` (m,)."""
        K1_eta = self.K1 @ eta
        return 0.5 * (K1_eta @ eta) + ((self.K2 @ eta) @ eta) @ eta / 6.0

    def strain_energy(self, eta: np.ndarray) -> float:
        """``½ ηᵀK0η + K1·η³/3! + K2·η⁴/4!`` (J) (Eq 18)."""
        energy = super().strain_energy(eta)
        if self.K1 is None:
            return energy
        K1_eta = (self.K1 @ eta) @ eta
        return energy + K1_eta @ eta / 6.0 + (((self.K2 @ eta) @ eta) @ eta) @ eta / 24.0


class ConsistentBodyModel(StiffenedBodyModel):
    """Damaren & Sharf's consistent model CL (module docstring): every inertial term and the
    first-order geometric stiffness of the axial load carried by the stretch modes."""

    def __init__(self, model, i: int):
        super().__init__(model, i)
        self.rows[self.body.axial_modes] = 0.0

    def geometric_force(self, eta: np.ndarray) -> np.ndarray:
        """``½ K1_ijk η_j η_k`` on the rows that are not stretch modes, 0 on those (m,)."""
        return self.rows * (0.5 * ((self.K1 @ eta) @ eta))

    def strain_energy(self, eta: np.ndarray) -> float:
        """``½ ηᵀK0η + K1·η³/3!`` (J): the energy of the cubic term, whose transverse gradient
        the model keeps."""
        energy = super().strain_energy(eta)
        if self.K1 is None:
            return energy
        return energy + ((self.K1 @ eta) @ eta) @ eta / 6.0
